/**
 * Admin auth: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time (an organisation admin),
 * or, when `auth.oidc` is set, a signed-in session's cookie (a user with the roles of their groups;
 * lib/people/sessions.ts), whose state-changing calls must carry its CSRF token in `x-csrf-token`. The
 * admin surface is separate from API keys: `x-api-key` is never read here, and an `sk-cs4-` key is
 * just a wrong token.
 */
import type { RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import { errors, GatewayError } from '../http/errors';
import { digestsEqual, hashSecret } from '../keys/secrets';
import { CSRF_HEADER, csrfTokenMatches, type Sessions } from '../people/sessions';
import { setActor } from './actor';

export interface AdminAuthOptions {
  /** The configured ADMIN_TOKEN; null when unset (then only sessions get in: `auth.oidc`). */
  token: string | null;
  /** Signed-in sessions (only when `auth.oidc` is set); absent: ADMIN_TOKEN only. */
  sessions?: Sessions;
}

/** Methods that change nothing: a session's calls with any other need its CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether `candidate` equals `token`. Both are hashed first, so the comparison takes the same time
 * whatever the length or content of the candidate.
 */
export function adminTokenMatches(candidate: string, token: string | null): boolean {
  return token !== null && digestsEqual(hashSecret(candidate), hashSecret(token));
}

/** The bearer token of an Authorization header, if it carries one. */
function bearerOf(authorization: string | undefined): string | undefined {
  return typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
}

/**
 * 401 (`authentication_error`) unless the request carries the admin token as a bearer token or a live
 * session's cookie; 403 (`permission_error`) for a session's state-changing call without its CSRF token.
 * A bearer token, when sent, decides alone (a wrong one is refused even with a session cookie).
 */
export function createAdminAuth(options: AdminAuthOptions): RequestHandler {
  const { sessions } = options;
  return async (req, _res, next) => {
    const bearer = bearerOf(req.headers.authorization);
    if (!bearer && sessions?.hasCookie(req)) {
      let actor;
      try {
        actor = await sessions.actorOf(req);
      } catch (err) {
        return next(err);
      }
      if (!actor) return next(errors.authentication('session expired or signed out: sign in again at /dashboard/login'));
      if (!SAFE_METHODS.has(req.method) && !csrfTokenMatches(req.headers[CSRF_HEADER], actor.csrfToken)) {
        return next(new GatewayError(403, 'permission_error', `a signed-in call that changes something must send the session's CSRF token in ${CSRF_HEADER} (GET /admin/v1/me)`, { chatCode: 'forbidden' }));
      }
      setActor(req, actor);
      return next();
    }
    if (!bearer) {
      return next(errors.authentication(`missing admin token: send "Authorization: Bearer <ADMIN_TOKEN>"${sessions ? ' or sign in at /dashboard/login' : ''}`));
    }
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
