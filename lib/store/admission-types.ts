/** The store's side of a request before its upstream call: the key snapshot and the admission (GatewayStore.admit). */
import type { TeamCaps } from './people-caps';
import type { KeyRecord, ReserveResult } from './records';

/**
 * A key as a request's auth step found it, with the version of its record (every change to the record
 * adds one). The Redis store may answer from the record as it last saw it: the admission step checks
 * the version, the secret and the revocation in the store before anything is counted or held.
 */
export interface KeySnapshot {
  key: KeyRecord;
  version: number;
}

/** What a request asks of the store before its upstream call, as one atomic step (one Redis script). */
export interface AdmissionRequest {
  /** The key as the auth step found it; admitted only when the store's record still has this version. */
  snapshot: KeySnapshot;
  /** SHA-256 (hex) of the secret the request carried: refused when revoked, unknown or expired by now. */
  secretSha256: string;
  /** Epoch ms. */
  now: number;
  /** Rate-limit window, ms: the key's `rateLimitPerMinute` requests per window, starting at its first request. */
  rateLimitWindowMs: number;
  /**
   * Credits to hold against the key's `monthlyCreditCap` in `month`'s bucket, for `ttlMs`, when the
   * request is within its rate limit; null for a route that is not billed. With `minCredits`, holds
   * what is left when `credits` do not fit but `minCredits` do (GatewayStore.reserveCredits). With
   * `teamCaps` (a key in a team), held in the same step against the member's and the team's month
   * ledgers too (people-caps.ts); absent: the key's only, as for a key without a team.
   */
  reservation: { month: string; credits: number; minCredits?: number; ttlMs: number; teamCaps?: TeamCaps } | null;
  /**
   * Epoch ms (this process's clock) by which the caller gives up on the admission (the store guard:
   * the call's start plus `store.timeoutMs`). The Redis store admits nothing that reaches the server
   * after it (a stalled server that runs the script later counts and holds nothing) and throws. The
   * memory store ignores it: it admits in this process, at once, so no admission runs after its
   * caller gave up. Absent: no deadline.
   */
  deadline?: number;
}

/**
 * The store's answer to an admission:
 * - `refused`: the secret is unknown or expired, or the key is revoked; nothing was counted;
 * - `changed`: the key's record changed since the snapshot (here as it is now); nothing was counted;
 * - `admitted`: the request was counted against the rate limit (`totalHits` in the window ending at
 *   `resetTime`); `reserved` is the credit hold's result, or null when none was asked for or the
 *   request is over its rate limit (then nothing was held).
 */
export type AdmissionResult =
  | { outcome: 'refused'; reason: 'unknown' | 'revoked' }
  | { outcome: 'changed'; snapshot: KeySnapshot }
  | { outcome: 'admitted'; totalHits: number; resetTime: Date; reserved: ReserveResult | null };
