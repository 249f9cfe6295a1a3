/**
 * When an upstream request is tried again, here or at another target: only when the upstream cannot
 * have started its work, so that no request runs twice (RFC 9110 §9.2.2: a non-idempotent request is
 * retried only when it is known not to have been applied). That is an attempt whose connection, TLS
 * handshake or write failed before the request had left whole, or one the upstream refused with a
 * status that says it did not run it (429, 503, 529), before any byte went to the client, with
 * exponential backoff (or the upstream's `retry-after`), as the official SDKs do (wire-formats.md §4.2).
 * A head timeout, a socket that died after the request was sent, a 500 or a 502 may have run it:
 * they end the request (the client's SDK may send it again: that is the client's choice).
 */
import type http from 'node:http';
import { mapUpstreamSocketError, type GatewayError } from '../http/errors';
import type { AttemptFailure, AttemptOutcome } from './attempt';
import type { CredentialRotation, UpstreamCredential } from './credentials';

/**
 * Statuses with which the upstream refuses a request it did not run, retried before the first byte:
 * 429 rate limit and 529 overload ("Your account has hit a rate limit", "the API is temporarily
 * overloaded", https://docs.anthropic.com/en/api/errors) and 503 (the server "is currently unable to
 * handle the request", RFC 9110 §15.6.4; OpenAI's overload). Not 500 (`api_error`, "an unexpected error
 * internal to Anthropic's systems": it may come after the work began) nor 502 (a proxy lost its
 * origin, which may be running the request).
 */
export const RETRYABLE_STATUSES = new Set([429, 503, 529]);

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

/** Longest wait, ms, from a request's last byte leaving to its socket's reset for the reset to mean it was never read. */
export const IDLE_RESET_WINDOW_MS = 1000;

/**
 * Whether an attempt failed as a request sent on a kept-alive socket the upstream had closed while it
 * sat idle: a reused socket (`reusedSocket`), reset or closed (`ECONNRESET`: Node's "socket hang up"
 * or the kernel's reset) before any reply head, without a head timeout. The request met a connection
 * the upstream's server had already given up, so its application never saw it (RFC 9112 §9.3.1: the
 * client "MAY open a new connection"; the agent's idle limit below the upstream's makes it rare,
 * target.ts). Such an attempt is sent again once, on a fresh socket to the same target (client.ts).
 * Only when the reset came within IDLE_RESET_WINDOW_MS of the request's last byte leaving: a closed
 * socket answers a write within a round trip, while a later reset may have cut a request the upstream
 * was running (a load balancer's idle limit during a long head wait), which is never sent twice.
 */
export function isIdleSocketReset(outcome: AttemptOutcome): boolean {
  return !('status' in outcome) && outcome.reusedSocket && !outcome.timedOut && outcome.error.code === 'ECONNRESET'
    && (outcome.sinceSentMs ?? 0) <= IDLE_RESET_WINDOW_MS;
}

/**
 * Whether the upstream cannot have started the work of an attempt that brought `outcome`, so that it
 * may be sent again: a refusal status (RETRYABLE_STATUSES), a connection, TLS handshake or write that
 * failed before the request left whole (AttemptFailure.requestSent), or a kept-alive socket the
 * upstream had closed while idle (`isIdleSocketReset`). Never a head timeout: the upstream may be
 * running the request.
 */
export function isNotStarted(outcome: AttemptOutcome): boolean {
  if ('status' in outcome) return RETRYABLE_STATUSES.has(outcome.status);
  return !outcome.timedOut && (!outcome.requestSent || isIdleSocketReset(outcome));
}

/** The errors of requests the upstream may have run although no reply head came (see `isOutcomeUnknown`). */
const outcomeUnknown = new WeakSet<Error>();

/**
 * True when `err`, thrown by `exchange`, ended a request the upstream may have run: its head timed out,
 * or its socket was lost after the request had left whole. The upstream may bill it; no usage came back.
 */
export function isOutcomeUnknown(err: unknown): boolean {
  return err instanceof Error && outcomeUnknown.has(err);
}

/**
 * The error of an attempt that brought no reply head and is not tried again: 504 after a head timeout,
 * else 502 (errors.ts, `mapUpstreamSocketError`), marked when the upstream may have run the request.
 */
export function attemptError(failed: AttemptFailure): GatewayError {
  const error = mapUpstreamSocketError(failed.error, failed.timedOut);
  if (!isNotStarted(failed)) outcomeUnknown.add(error);
  return error;
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
    if (retriesDone >= options.maxRetries || !isNotStarted(outcome)) return null;
    // A kept-alive socket the upstream closed while it sat idle, before it took the request: at once.
    if (isIdleSocketReset(outcome)) return 0;
    return backoff(retriesDone);
  };
}
