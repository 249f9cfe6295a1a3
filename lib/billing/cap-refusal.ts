/**
 * The 402 of a credit hold the caps refuse, one shape for every billed route (the messages routes'
 * credit step, middleware/credit-reservation.ts, and a Message Batch's create, routes/message-batches.ts):
 * `billing_error` (chat: `insufficient_quota`), the cap that stopped it in its words and in
 * `x-gateway-limit: key|member|team` (the key's own, its member's or its team's: lib/store/people-caps.ts),
 * what is spent, held and left, what the request needs, and how to fit it. When holds of requests in
 * flight are in the way (without them it would fit), it says so and carries `retry-after`. Not 429:
 * no retry can succeed before the month ends, and the SDKs retry 429 but not 402.
 */
import { GatewayError } from '../http/errors';
import type { CapLevel } from '../store/types';

/** Seconds a client refused for holds in flight is told to wait (`retry-after`): most replies end well within it. */
export const IN_FLIGHT_RETRY_AFTER_S = 5;

/** Credits for a message: at most 6 decimals, no trailing zeros. */
export function formatCredits(credits: number): string {
  return String(Math.round(credits * 1e6) / 1e6);
}

/** What the refused request needs, for the 402's words. */
export interface CapNeed {
  /** Credits the request needs at least (its smallest hold); what must be free for it to fit. */
  minCredits: number;
  /** What it needs, in words: `this request needs at least ...`, `this batch may cost up to ...`. */
  words: string;
  /** How to fit it, in words: `To fit, send ...`. */
  toFit: string;
}

/**
 * The 402 of a refused hold.
 * @param result the refused hold's figures (ReserveResult), credits: the tightest cap (`cap`), spent
 *   and held (`reserved`, by requests in flight) on its ledger, and which cap it is (`limit`, default `key`)
 * @param month the UTC month, `YYYY-MM`
 * @param resetsAt when the cap resets, ISO 8601 (the next UTC month's start)
 */
export function capRefusal(result: { spent: number; reserved: number; cap: number; limit?: CapLevel }, month: string, need: CapNeed, resetsAt: string): GatewayError {
  const limit = result.limit ?? 'key';
  const left = Math.max(0, result.cap - result.spent - result.reserved);
  const state = `${formatCredits(result.spent)} of ${formatCredits(result.cap)} credits spent in ${month} (UTC)`;
  if (result.reserved > 0 && result.cap - result.spent >= need.minCredits) {
    return new GatewayError(402, 'billing_error',
      `monthly credit cap of this ${limit}: ${state}, ${formatCredits(result.reserved)} held by requests in flight, ${formatCredits(left)} free now; ` +
      `${need.words}. Retry when requests in flight have finished.`,
      { chatCode: 'insufficient_quota', headers: { 'retry-after': String(IN_FLIGHT_RETRY_AFTER_S), 'x-gateway-limit': limit } });
  }
  const reached = result.spent >= result.cap ? `monthly credit cap reached for this ${limit}` : `monthly credit cap of this ${limit}`;
  return new GatewayError(402, 'billing_error',
    `${reached}: ${state}, ${formatCredits(left)} left; ${need.words}. ${need.toFit} The cap resets at ${resetsAt}.`,
    { chatCode: 'insufficient_quota', headers: { 'x-gateway-limit': limit } });
}

/** When a cap resets as the 402 says it: `nextMonthStart` (epoch ms, store/month.ts nextUtcMonthStart) as e.g. `2026-12-01T00:00:00Z`. */
export function formatResetsAt(nextMonthStart: number): string {
  return new Date(nextMonthStart).toISOString().replace(/\.000Z$/, 'Z');
}
