/**
 * Quota slot of the pipeline: per-key rate limit and credit reservation go here (see the per-key
 * controls). Until they are configured it lets every request through.
 */
import type { RequestHandler } from 'express';

export function createQuota(): RequestHandler {
  return (_req, _res, next) => next();
}
