/**
 * Version header (native routes only): `anthropic-version` or `vendor-version` (the spec's name),
 * `2023-06-01` or any later `YYYY-MM-DD` date. Missing, malformed or earlier: 400 naming the header.
 * The value is forwarded upstream unchanged, as `anthropic-version`.
 */
import type { RequestHandler } from 'express';
import { errors } from '../lib/http/errors';

/** Earliest accepted version. */
export const MIN_API_VERSION = '2023-06-01';

/**
 * The version a request asks for.
 * @throws GatewayError 400 when the header is missing, not a real `YYYY-MM-DD` date, or earlier than 2023-06-01
 */
export function parseVersionHeader(headers: Record<string, string | string[] | undefined>): string {
  const raw = headers['anthropic-version'] ?? headers['vendor-version'];
  if (raw === undefined) {
    throw errors.invalidRequest(`missing version header: send "anthropic-version: ${MIN_API_VERSION}" (or vendor-version)`);
  }
  const value = Array.isArray(raw) ? raw[0] : raw;
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const time = date === null ? NaN : Date.parse(`${value}T00:00:00Z`);
  const valid = !Number.isNaN(time) && new Date(time).toISOString().startsWith(value);
  if (!valid) {
    throw errors.invalidRequest(`anthropic-version header: "${value.slice(0, 40)}" is not a version; use ${MIN_API_VERSION}`);
  }
  if (value < MIN_API_VERSION) {
    throw errors.invalidRequest(`anthropic-version header: ${value} is earlier than the earliest supported version ${MIN_API_VERSION}`);
  }
  return value;
}

/** How many distinct accepted versions a version-header step remembers (clients send a handful). */
const REMEMBERED_VERSIONS = 32;

export function createVersionHeader(): RequestHandler {
  // Values already found valid skip the date parse (two Date objects per request otherwise).
  const accepted = new Set<string>();
  return (req, _res, next) => {
    try {
      const raw = req.headers['anthropic-version'] ?? req.headers['vendor-version'];
      if (typeof raw === 'string' && accepted.has(raw)) return next();
      const version = parseVersionHeader(req.headers);
      if (version === raw && accepted.size < REMEMBERED_VERSIONS) accepted.add(version);
      next();
    } catch (err) {
      next(err);
    }
  };
}
