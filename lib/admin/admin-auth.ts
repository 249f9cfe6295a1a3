/**
 * Admin auth: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time. The admin surface is
 * separate from API keys: `x-api-key` is never read here, and an `sk-cs4-` key is just a wrong token.
 */
import type { RequestHandler } from 'express';
import { errors } from '../errors';
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
