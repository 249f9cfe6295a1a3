/**
 * Per-key rate limit (express-rate-limit): at most the key's `rateLimitPerMinute` requests in a
 * one-minute window that starts at the key's first request. The counter lives in the gateway store's
 * rate-limit store (memory: this process; Redis: shared, so every instance counts against one window).
 *
 * Every reply past this step carries the headers of both client families (wire-formats.md §4.1, §7):
 *   anthropic-ratelimit-requests-limit / -remaining / -reset (RFC 3339 time of the window's end)
 *   x-ratelimit-limit-requests / x-ratelimit-remaining-requests / x-ratelimit-reset-requests (Go duration)
 * Over the limit: 429 `rate_limit_error` (chat: `rate_limit_exceeded`) with `retry-after` in seconds.
 */
import type { Request, RequestHandler, Response } from 'express';
import { rateLimit, type RateLimitInfo, type Store } from 'express-rate-limit';
import { getContext } from '../lib/context';
import { GatewayError } from '../lib/errors';

/** Length of a rate-limit window: one minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitOptions {
  /** Counter store, from `GatewayStore.createRateLimitStore()`. */
  store: Store;
  /** Requests per window for this request's key. Default: the key record's `rateLimitPerMinute`. */
  limit?: number | ((req: Request, res: Response) => number);
  /** Clock for the reset headers, epoch ms. Default `Date.now`. */
  now?: () => number;
}

/** Where express-rate-limit puts its figures on the request (its own convention, read here only). */
const INFO_PROPERTY = 'rateLimit';

export function createRateLimit(options: RateLimitOptions): RequestHandler {
  const now = options.now ?? Date.now;
  const limitOf = options.limit ?? ((_req: Request, res: Response) => getContext(res).key!.rateLimitPerMinute);
  const limiter = rateLimit({
    windowMs: RATE_LIMIT_WINDOW_MS,
    limit: typeof limitOf === 'number' ? limitOf : (req, res) => limitOf(req, res),
    // Counted per key (not per IP): every instance and every secret of a rotated key share one count.
    keyGenerator: (_req, res) => getContext(res).key!.id,
    store: options.store,
    legacyHeaders: false,
    standardHeaders: false,
    requestPropertyName: INFO_PROPERTY,
    // Keyed by key id, so the library's IP and proxy checks do not apply; its other checks are for
    // set-up mistakes (a limiter built per request, a request counted twice) that the tests cover,
    // and the double-count check keeps a map per request. All off.
    validate: false,
    handler: (_req, _res, next) => next(RATE_LIMITED),
  });
  return (req, res, next) => {
    // The limiter is an async function: a store failure rejects, and reaches the error handler here.
    Promise.resolve(limiter(req, res, (err?: unknown) => {
      const info = (req as unknown as Record<string, RateLimitInfo | undefined>)[INFO_PROPERTY];
      if (info) setRateLimitHeaders(res, info, now());
      if (err !== RATE_LIMITED) return next(err);
      const retryAfter = secondsUntil(info?.resetTime, now());
      res.setHeader('retry-after', String(retryAfter));
      next(new GatewayError(429, 'rate_limit_error',
        `rate limit of ${info?.limit} requests per minute reached for this key; retry after ${retryAfter} s`,
        { chatCode: 'rate_limit_exceeded' }));
    })).catch(next);
  };
}

/** Marker the library's handler passes on; replaced by the real error, which needs the figures. */
const RATE_LIMITED = Symbol('rate limited');

/** Set both header families from the limiter's figures. */
export function setRateLimitHeaders(res: Response, info: Pick<RateLimitInfo, 'limit' | 'remaining' | 'resetTime'>, now: number): void {
  const resetAt = info.resetTime?.getTime() ?? now + RATE_LIMIT_WINDOW_MS;
  res.setHeader('anthropic-ratelimit-requests-limit', String(info.limit));
  res.setHeader('anthropic-ratelimit-requests-remaining', String(info.remaining));
  res.setHeader('anthropic-ratelimit-requests-reset', formatRfc3339(resetAt));
  res.setHeader('x-ratelimit-limit-requests', String(info.limit));
  res.setHeader('x-ratelimit-remaining-requests', String(info.remaining));
  res.setHeader('x-ratelimit-reset-requests', formatGoDuration(Math.max(0, resetAt - now)));
}

/** Whole seconds from `now` until `resetTime`, at least 1 (what `retry-after` says). */
export function secondsUntil(resetTime: Date | undefined, now: number): number {
  const ms = (resetTime?.getTime() ?? now + RATE_LIMIT_WINDOW_MS) - now;
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The last instant formatted by {@link formatRfc3339}: a key's window end is the same for a whole minute. */
let lastRfc3339 = { seconds: NaN, text: '' };

/** An instant as RFC 3339 UTC with whole seconds, rounded up (`2025-07-01T12:00:05Z`). */
export function formatRfc3339(epochMs: number): string {
  const seconds = Math.ceil(epochMs / 1000);
  if (seconds !== lastRfc3339.seconds) {
    lastRfc3339 = { seconds, text: new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') };
  }
  return lastRfc3339.text;
}

/**
 * A duration as Go's `time.Duration` prints it, the form the chat SDK family's reset headers use
 * (wire-formats.md §7): `250ms`, `7s`, `1m0s`, `1m30s`. Whole seconds are rounded up.
 */
export function formatGoDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m${seconds % 60}s`;
}
