/**
 * Per-key rate limit (express-rate-limit): at most the key's `rateLimitPerMinute` requests in a
 * one-minute window that starts at the key's first request. The counter lives in the gateway store
 * (memory: this process; Redis: shared, so every instance counts against one window).
 *
 * The count is taken by the request's admission (`GatewayStore.admit`): one atomic store step (one
 * Redis script, one round trip) that also checks the key the auth step found (its record's version,
 * the secret, the revocation) and takes the credit reservation's hold when the request is within its
 * limit. express-rate-limit stays the middleware (limit, refusal; this step writes the headers); its store is an adapter
 * that answers with the admission's count. So a request waits for one round trip to Redis before its
 * upstream call, where a separate rate-limit store (rate-limit-redis) would add one of its own.
 *
 * Every reply past this step carries the headers of both client families (wire-formats.md §4.1, §7):
 *   anthropic-ratelimit-requests-limit / -remaining / -reset (RFC 3339 time of the window's end)
 *   x-ratelimit-limit-requests / x-ratelimit-remaining-requests / x-ratelimit-reset-requests (Go duration)
 * Over the limit: 429 `rate_limit_error` (chat: `rate_limit_exceeded`) with `retry-after` in seconds.
 */
import type { Request, RequestHandler, Response } from 'express';
import { rateLimit, type IncrementResponse, type RateLimitInfo, type Store } from 'express-rate-limit';
import { getContext, type RequestContext } from '../lib/pipeline/context';
import { errors, GatewayError } from '../lib/http/errors';
import type { AdmissionRequest, LedgerStore, StoreConnection } from '../lib/store/types';

/** Length of a rate-limit window: one minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitOptions {
  /** The gateway store, whose `admit` counts the request. */
  store: LedgerStore & Pick<StoreConnection, 'kind'>;
  /**
   * The credit hold this route's requests ask for with their admission (the credit reservation step
   * reads the result); absent for a route that is not billed.
   */
  reservationFor?: (req: Request, res: Response) => NonNullable<AdmissionRequest['reservation']>;
  /**
   * When the key's record changed since the auth step read it: the refusal the earlier steps (key
   * group, whitelist) would now make on the new record, or null. Default: none.
   */
  recheck?: (ctx: RequestContext) => Error | null;
  /** Clock for the admission and the reset headers, epoch ms. Default `Date.now`. */
  now?: () => number;
}

/** Admissions tried for one request when its key keeps changing under it. */
const MAX_ADMISSIONS = 3;

/**
 * Admit a request (GatewayStore.admit) and put the result on its context.
 * @returns the admission's rate-limit count
 * @throws GatewayError 401 when the key is revoked or the secret unknown or expired; the recheck's
 *   refusal when the key changed; 503 when it changed on every try
 */
export async function admitRequest(req: Request, res: Response, options: RateLimitOptions): Promise<IncrementResponse> {
  const span = getContext(res).trace?.startSpan('gateway.admission', 'internal', { 'gateway.store': options.store.kind });
  try {
    const result = await admitWithRetries(req, res, options);
    span?.end();
    return result;
  } catch (err) {
    span?.end(err as Error);
    throw err;
  }
}

async function admitWithRetries(req: Request, res: Response, options: RateLimitOptions): Promise<IncrementResponse> {
  const ctx = getContext(res);
  const reservation = options.reservationFor?.(req, res) ?? null;
  for (let attempt = 1; attempt <= MAX_ADMISSIONS; attempt += 1) {
    const result = await options.store.admit({
      snapshot: { key: ctx.key!, version: ctx.keyVersion ?? 0 },
      secretSha256: ctx.secretSha256!,
      now: (options.now ?? Date.now)(),
      rateLimitWindowMs: RATE_LIMIT_WINDOW_MS,
      reservation,
    });
    if (result.outcome === 'admitted') {
      ctx.admission = { ...result, asked: reservation };
      return { totalHits: result.totalHits, resetTime: result.resetTime };
    }
    if (result.outcome === 'refused') {
      throw errors.authentication(result.reason === 'revoked' ? 'this API key has been revoked' : 'invalid API key');
    }
    ctx.key = result.snapshot.key;
    ctx.keyGroup = result.snapshot.key.keyGroup;
    ctx.keyVersion = result.snapshot.version;
    const refusal = options.recheck?.(ctx) ?? null;
    if (refusal) throw refusal;
  }
  throw new GatewayError(503, 'api_error', 'this key is being changed; try again shortly', { chatCode: 'service_unavailable', headers: { 'retry-after': '1' } });
}

/** Where express-rate-limit puts its figures on the request (its own convention, read here only). */
const INFO_PROPERTY = 'rateLimit';

export function createRateLimit(options: RateLimitOptions): RequestHandler {
  const now = options.now ?? Date.now;
  // express-rate-limit hands its store only the key it generated: each request gets a token under
  // which the adapter finds it again. The count itself is per API key (not per IP), in the admission:
  // every instance and every secret of a rotated key share one count.
  const waiting = new Map<string, { req: Request; res: Response }>();
  let tokens = 0;
  const store: Store = {
    async increment(token: string) {
      const request = waiting.get(token)!;
      waiting.delete(token);
      return admitRequest(request.req, request.res, options);
    },
    async decrement() {},
    async resetKey() {},
  };
  const limiter = rateLimit({
    windowMs: RATE_LIMIT_WINDOW_MS,
    // Read after the admission: the key as the store holds it.
    limit: (_req, res) => getContext(res).key!.rateLimitPerMinute,
    keyGenerator: (req, res) => {
      const token = String((tokens += 1));
      waiting.set(token, { req, res });
      return token;
    },
    store,
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
