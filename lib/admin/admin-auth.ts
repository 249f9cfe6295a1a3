/**
 * Admin auth: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time. The admin surface is
 * separate from API keys: `x-api-key` is never read here, and an `sk-cs4-` key is just a wrong token.
 */
import type { RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { errors, GatewayError } from '../http/errors';
import { digestsEqual, hashSecret } from '../keys/secrets';
import { setActor } from './actor';

export interface AdminAuthOptions {
  /** The configured ADMIN_TOKEN (never empty: an unset token leaves the admin router unmounted). */
  token: string;
}

/**
 * Whether `candidate` equals `token`. Both are hashed first, so the comparison takes the same time
 * whatever the length or content of the candidate.
 */
export function adminTokenMatches(candidate: string, token: string): boolean {
  return digestsEqual(hashSecret(candidate), hashSecret(token));
}

/** The bearer token of an Authorization header, if it carries one. */
function bearerOf(authorization: string | undefined): string | undefined {
  return typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
}

/** 401 (`authentication_error`) unless the request carries the admin token as a bearer token. */
export function createAdminAuth(options: AdminAuthOptions): RequestHandler {
  return (req, _res, next) => {
    const bearer = bearerOf(req.headers.authorization);
    if (!bearer) return next(errors.authentication('missing admin token: send "Authorization: Bearer <ADMIN_TOKEN>"'));
    if (!adminTokenMatches(bearer, options.token)) return next(errors.authentication('invalid admin token'));
    setActor(req, { kind: 'admin-token' });
    next();
  };
}

/** Refused admin requests allowed per client address per minute before it gets 429. */
export const ADMIN_FAILED_AUTH_LIMIT = 50;

/**
 * Slows down guessing of the admin token: after `ADMIN_FAILED_AUTH_LIMIT` refused (401) admin requests
 * in a minute, a client address gets 429 (`rate_limit_error`, with `retry-after`) until the minute
 * ends. Counted per instance; accepted requests are not counted, and a request with the right token is
 * never refused: the limit is per address, and everyone behind one router shares an address, so a
 * stranger's wrong guesses must not lock the operator out. Accepting the right token meanwhile lets
 * guessing go on, which the token's own strength answers (ADMIN_TOKEN: a long random secret), not this limit.
 */
export function createAdminAuthLimit(options: AdminAuthOptions): RequestHandler {
  return rateLimit({
    skip: (req) => {
      const bearer = bearerOf(req.headers.authorization);
      return bearer !== undefined && adminTokenMatches(bearer, options.token);
    },
    windowMs: 60_000,
    limit: ADMIN_FAILED_AUTH_LIMIT,
    skipSuccessfulRequests: true,
    requestWasSuccessful: (_req, res) => res.statusCode !== 401,
    standardHeaders: false,
    legacyHeaders: false,
    handler: (_req, res, next) => {
      const resetTime = (_req as unknown as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const seconds = resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : 60;
      next(new GatewayError(429, 'rate_limit_error', `too many refused admin requests from this address; retry in ${seconds} s`, {
        chatCode: 'rate_limit_exceeded', headers: { 'retry-after': String(seconds) },
      }));
    },
  });
}
