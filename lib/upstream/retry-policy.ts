/**
 * When an upstream request is tried again: before any byte went to the client only, for a refused
 * connection, a kept-alive socket the upstream had closed, or a rate limit / server error / overload
 * status, with exponential backoff (or the upstream's `retry-after`), as the official SDKs do
 * (wire-formats.md §4.2).
 */
import type http from 'node:http';
import type { AttemptOutcome } from './attempt';
import type { CredentialRotation, UpstreamCredential } from './credentials';

/** Statuses retried before the first byte: rate limit, server error, overload. */
export const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 529]);

/** Backoff cap, as the official SDKs. */
const MAX_BACKOFF_MS = 8000;

export interface RetryPolicyOptions {
  /** Retries before the first byte went to the client. */
  maxRetries: number;
  /** First backoff delay in ms, doubled per retry and capped at 8000 ms. */
  retryBaseDelayMs: number;
  /** A longer `retry-after` (ms) is not waited for: the reply goes to the client. */
  maxRetryAfterMs: number;
  /** How long a credential that got a 401 or 429 is left out of the rotation, in ms. */
  credentialRestMs: number;
  /** Clock (epoch ms) and random source in [0, 1). */
  now: () => number;
  random: () => number;
}

/**
 * Delay asked for by a reply's `retry-after-ms` (ms) or `retry-after` (seconds or an HTTP date), in ms.
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: http.IncomingHttpHeaders, now = Date.now()): number | undefined {
  const ms = Number(headers['retry-after-ms']);
  if (headers['retry-after-ms'] !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers['retry-after'];
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The policy as one function: record an attempt's outcome (a 401/429 rests its credential) and decide.
 * @returns (credential, outcome, retriesDone) => the delay in ms before the next attempt, or null for none
 */
export function createRetryPolicy(options: RetryPolicyOptions, credentials: CredentialRotation) {
  const backoff = (retriesDone: number) =>
    Math.round(Math.min(options.retryBaseDelayMs * 2 ** retriesDone, MAX_BACKOFF_MS) * (1 - 0.25 * options.random()));

  return function planRetry(credential: UpstreamCredential, outcome: AttemptOutcome, retriesDone: number): number | null {
    if ('status' in outcome) {
      const retryAfter = parseRetryAfter(outcome.headers, options.now());
      const rejected = outcome.status === 401 || outcome.status === 429;
      if (rejected) credentials.rest(credential.index, options.now() + Math.max(options.credentialRestMs, retryAfter ?? 0));
      if (retriesDone >= options.maxRetries || outcome.headers['x-should-retry'] === 'false') return null;
      // Another credential is not bound by this one's limit or by its rejection: try it at once.
      if (rejected && credential.index >= 0 && credentials.anotherAwake(credential.index)) return 0;
      if (!RETRYABLE_STATUSES.has(outcome.status)) return null;
      if (retryAfter !== undefined) return retryAfter <= options.maxRetryAfterMs ? retryAfter : null;
      return backoff(retriesDone);
    }
    if (retriesDone >= options.maxRetries || outcome.timedOut) return null;
    if (outcome.error.code === 'ECONNREFUSED') return backoff(retriesDone);
    // A kept-alive socket the upstream closed while it sat idle: the request never reached it.
    if (outcome.error.code === 'ECONNRESET' && outcome.reusedSocket) return 0;
    return null;
  };
}
