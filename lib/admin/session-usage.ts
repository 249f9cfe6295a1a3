/**
 * Usage by agent session (`GET /admin/v1/usage?groupBy=session`): the request log records of a range
 * summed per key and session id (lib/observability/session-id.ts). Session ids are client-supplied labels, so two
 * keys sending the same id are two rows: a session never mixes keys. The log is written in the same
 * store step as the day totals, so a session's credits are exactly the sum of its requests' credits.
 * Records older than the request log's retention are gone, and with them their sessions.
 */
import type { RequestLogRecord, RequestLogStore } from '../store/types';
import { UsageAccumulator, type UsageSums } from './usage-query';

/** Request log records read from the store per page while summing. */
const PAGE_RECORDS = 1000;

/** One session of one key, with its sums (credits in credits). */
export type SessionRow = {
  /** The client's session id; null for the key's requests that sent none. */
  sessionId: string | null;
  keyId: string | null;
  /** Agent or subagent ids seen in the session (at most 20, in order of first appearance). */
  agentIds: string[];
  /** Models used, in order of first appearance. */
  models: string[];
  /** ISO 8601 arrival of the first request and close of the last. */
  start: string;
  end: string;
  /** From the first request's arrival to the last one's close, ms. */
  durationMs: number;
} & UsageSums;

/** Which records count: a key, a model, a session id (undefined: any). */
export interface SessionFilter {
  keyId?: string;
  model?: string;
  sessionId?: string;
}

const MAX_AGENT_IDS = 20;

interface SessionBucket {
  sessionId: string | null;
  keyId: string | null;
  agentIds: string[];
  models: string[];
  start: number;
  end: number;
  sums: UsageAccumulator;
}

/** The sums of a log record (one request). */
function sumsOf(record: RequestLogRecord): UsageSums {
  return {
    requests: 1, inputTokens: record.inputTokens, outputTokens: record.outputTokens,
    cacheCreationInputTokens: record.cacheCreationInputTokens, cacheReadInputTokens: record.cacheReadInputTokens, credits: record.credits,
  };
}

/**
 * The sessions of the request log records with `fromMs <= time < toMs` (epoch ms) that pass `filter`,
 * by credits, highest first, then by start.
 * @throws what the store's `readRequestLog` throws
 */
export async function sumBySession(store: RequestLogStore, fromMs: number, toMs: number, filter: SessionFilter): Promise<SessionRow[]> {
  const buckets = new Map<string, SessionBucket>();
  let cursor: string | null = null;
  do {
    const page = await store.readRequestLog(fromMs, toMs, cursor, PAGE_RECORDS);
    for (const record of page.records) {
      const sessionId = record.sessionId ?? null;
      if (filter.keyId !== undefined && record.keyId !== filter.keyId) continue;
      if (filter.model !== undefined && record.model !== filter.model) continue;
      if (filter.sessionId !== undefined && sessionId !== filter.sessionId) continue;
      // JSON of the pair: no separator a session id could forge.
      const id = JSON.stringify([record.keyId, sessionId]);
      let bucket = buckets.get(id);
      if (!bucket) {
        bucket = { sessionId, keyId: record.keyId, agentIds: [], models: [], start: Infinity, end: -Infinity, sums: new UsageAccumulator() };
        buckets.set(id, bucket);
      }
      bucket.sums.add(sumsOf(record));
      bucket.start = Math.min(bucket.start, record.time - record.durationMs);
      bucket.end = Math.max(bucket.end, record.time);
      const agentId = record.agentId ?? null;
      if (agentId !== null && !bucket.agentIds.includes(agentId) && bucket.agentIds.length < MAX_AGENT_IDS) bucket.agentIds.push(agentId);
      if (record.model !== null && !bucket.models.includes(record.model)) bucket.models.push(record.model);
    }
    cursor = page.cursor;
  } while (cursor !== null);
  return [...buckets.values()].map((bucket): SessionRow => ({
    sessionId: bucket.sessionId, keyId: bucket.keyId, agentIds: bucket.agentIds, models: bucket.models,
    start: new Date(Math.round(bucket.start)).toISOString(), end: new Date(Math.round(bucket.end)).toISOString(),
    durationMs: Math.round(bucket.end - bucket.start), ...bucket.sums.sums(),
  })).sort((a, b) => b.credits - a.credits || a.start.localeCompare(b.start));
}
