/**
 * Admin auth: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time. The admin surface is
 * separate from API keys: `x-api-key` is never read here, and an `sk-cs4-` key is just a wrong token.
 */
import type { RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { errors, GatewayError } from '../errors';
import { digestsEqual, hashSecret } from '../keys';

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

/** 401 (`authentication_error`) unless the request carries the admin token as a bearer token. */
export function createAdminAuth(options: AdminAuthOptions): RequestHandler {
  return (req, _res, next) => {
    const authorization = req.headers.authorization;
    const bearer = typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
    if (!bearer) return next(errors.authentication('missing admin token: send "Authorization: Bearer <ADMIN_TOKEN>"'));
    if (!adminTokenMatches(bearer, options.token)) return next(errors.authentication('invalid admin token'));
    next();
  };
}

/** Refused admin requests allowed per client address per minute before it gets 429. */
export const ADMIN_FAILED_AUTH_LIMIT = 50;

/**
 * Slows down guessing of the admin token: after `ADMIN_FAILED_AUTH_LIMIT` refused (401) admin requests
 * in a minute, a client address gets 429 (`rate_limit_error`, with `retry-after`) until the minute
 * ends. Counted per instance; accepted requests are not counted.
 */
export function createAdminAuthLimit(): RequestHandler {
  return rateLimit({
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
