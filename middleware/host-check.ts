/** Host check: with `baseUrl` configured, a request whose Host differs is refused with 421. */
import type { RequestHandler } from 'express';
import { errors } from '../lib/http/errors';

export interface HostCheckOptions {
  /** Public base URL (e.g. `https://gateway.example.com`); null disables the check. */
  baseUrl: string | null;
}

export function createHostCheck(options: HostCheckOptions): RequestHandler {
  if (!options.baseUrl) return (_req, _res, next) => next();
  const expected = new URL(options.baseUrl).host.toLowerCase();
  return (req, _res, next) => {
    const host = (req.headers.host ?? '').toLowerCase();
    if (host === expected) return next();
    next(errors.misdirected(`this gateway serves ${expected}; the request was addressed to "${host.slice(0, 100)}"`));
  };
}
