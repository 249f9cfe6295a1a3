/**
 * The last step before a route's upstream step: marks the request as having reached the upstream,
 * so its finish step writes a request log record (lib/request-log.ts). Requests refused earlier
 * (auth, validation, limits) get none.
 */
import type { RequestHandler } from 'express';
import { getContext } from '../lib/context';

export function createUpstreamMark(): RequestHandler {
  return (_req, res, next) => {
    getContext(res).upstreamReached = true;
    next();
  };
}
