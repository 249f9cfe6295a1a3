/** What the role suites of the store contract share: the fixture, the clock's start, sample keys and usage. */
import { expect } from 'chai';
import { hashSecret } from '../../../lib/keys/secrets';
import type { LedgerStore, NewKey, RequestLogPage, RequestLogRecord, RequestLogStore, UsageEntry } from '../../../lib/store/types';

/** A fresh, empty store of one implementation, typed with the roles a suite uses. */
export interface ContractFixture<S> {
  store: S;
  /** Set the store's clock (epoch ms). */
  setNow(ms: number): void;
}

/** The clock of every fresh fixture (2025-06-15 12:00 UTC). */
export const T0 = Date.UTC(2025, 5, 15, 12, 0, 0);
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

export function newKey(id: string, secret: string, overrides: Partial<NewKey> = {}): NewKey {
  return {
    id, secret: { sha256: hashSecret(secret), expiresAt: null }, last4: secret.slice(-4),
    rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null, ...overrides,
  };
}

export function usage(credits: number, model = 'model-haiku-4.5'): UsageEntry {
  return { model, inputTokens: 100, outputTokens: 20, cacheCreationInputTokens: 3, cacheReadInputTokens: 4, credits };
}

/** Credits as whole billionths, so sums compare exactly. */
export const units = (credits: number) => Math.round(credits * 1e9);

export function logRecord(requestId: string, overrides: Partial<RequestLogRecord> = {}): RequestLogRecord {
  return {
    time: 0, requestId, keyId: 'k1', keyGroup: 'default', route: 'POST /v1/messages', model: 'model-haiku-4.5', status: 200,
    stopReason: 'end_turn', inputTokens: 100, outputTokens: 20, cacheCreationInputTokens: 3, cacheReadInputTokens: 4, credits: 0,
    firstByteMs: 12.5, durationMs: 40, streamed: false, clientAborted: false, sessionId: 'sess-1', agentId: null, upstreamTarget: null, ...overrides,
  };
}

/** Reserve and settle one request of `credits` at `at` (epoch ms), with its log record unless `log` is false. */
export async function settleAt(store: LedgerStore, keyId: string, month: string, credits: number, at: number, model = 'model-haiku-4.5', log = true): Promise<void> {
  const r = await store.reserveCredits(keyId, month, 3, null, 60_000);
  if (!r.ok) throw new Error('reserve failed');
  await store.settleCredits(r.reservation, { ...usage(credits, model), at, log: log ? logRecord(`req_${at}_${credits}`, { keyId }) : undefined });
}

/** Every log record with `fromMs <= time < toMs`, read `limit` at a time. */
export async function readWholeLog(store: RequestLogStore, fromMs: number, toMs: number, limit = 2): Promise<RequestLogRecord[]> {
  const records: RequestLogRecord[] = [];
  let cursor: string | null = null;
  do {
    const page: RequestLogPage = await store.readRequestLog(fromMs, toMs, cursor, limit);
    records.push(...page.records);
    cursor = page.cursor;
  } while (cursor !== null);
  return records;
}

export async function expectRejection(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as Error).message).to.match(pattern);
    return;
  }
  throw new Error(`expected a rejection matching ${pattern}`);
}
