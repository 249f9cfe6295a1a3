/**
 * Reading back what the Redis store keeps for spend visibility: the day totals hash and the
 * request log stream. The writes are in the scripts (redis-scripts.ts).
 */
import { fromCreditUnits } from './credits';
import type { DailyUsageTotals, RequestLogRecord } from './types';

const USAGE_FIELDS = ['inputTokens', 'outputTokens', 'cacheCreationInputTokens', 'cacheReadInputTokens', 'credits', 'requests'] as const;

/**
 * How far past the end of a range the log is scanned, in ms: an entry's id may be later than its
 * record's time by the clock difference between instances (see APPEND_LOG_LUA). 15 minutes.
 */
export const LOG_ID_SLACK_MS = 15 * 60 * 1000;

/** Day rows from the fields of a `{<id>}:usage-day:<month>` hash (`<day>|<model>|<field>` -> integer). */
export function decodeDailyUsage(fields: Record<string, string>): DailyUsageTotals[] {
  const rows = new Map<string, DailyUsageTotals>();
  for (const [name, value] of Object.entries(fields)) {
    const day = name.slice(0, 10);
    const cut = name.lastIndexOf('|');
    const model = name.slice(11, cut);
    const field = name.slice(cut + 1) as (typeof USAGE_FIELDS)[number];
    if (!USAGE_FIELDS.includes(field)) continue;
    const key = `${day}|${model}`;
    let row = rows.get(key);
    if (!row) {
      row = { day, model, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, requests: 0 };
      rows.set(key, row);
    }
    row[field] = field === 'credits' ? fromCreditUnits(Number(value)) : Number(value);
  }
  return [...rows.values()];
}

/**
 * The fields of a record in the order a stream entry keeps them: the entry holds one field, `r`, a JSON
 * array of the values alone (about half the bytes of an object with names; a busy gateway writes
 * many). New fields go at the end, so older entries still decode (missing values read as null).
 */
const LOG_FIELDS: Array<keyof RequestLogRecord> = [
  'time', 'requestId', 'keyId', 'keyGroup', 'route', 'model', 'status', 'stopReason', 'inputTokens', 'outputTokens',
  'cacheCreationInputTokens', 'cacheReadInputTokens', 'credits', 'firstByteMs', 'durationMs', 'streamed', 'clientAborted',
  'sessionId', 'agentId',
  'upstreamTarget',
  'errorType', 'errorMessage', 'upstreamAttempts',
];

/**
 * The `r` field of a stream entry for `record`. Trailing nulls are left out (they decode as null): a
 * served request's entry does not grow by the fields only a failure fills (error, attempts).
 */
export function encodeLogRecord(record: RequestLogRecord): string {
  const values = LOG_FIELDS.map((field) => record[field] ?? null);
  let end = values.length;
  while (end > 0 && values[end - 1] === null) end--;
  return JSON.stringify(end === values.length ? values : values.slice(0, end));
}

/** A stream entry's record, or null when it is not one. */
export function decodeLogEntry(message: Record<string, string>): RequestLogRecord | null {
  try {
    const values = JSON.parse(message.r) as unknown[];
    if (!Array.isArray(values)) return null;
    const record: Record<string, unknown> = {};
    LOG_FIELDS.forEach((field, i) => (record[field] = values[i] ?? null));
    return record as unknown as RequestLogRecord;
  } catch {
    return null;
  }
}

/**
 * The records of a page of `request-log` stream entries that fall in [fromMs, toMs) and are not
 * older than `oldest` (trimming by MINID is approximate, whole nodes: records past the retention are
 * left out here), epoch ms.
 */
export function decodeLogPage(entries: Array<{ message: unknown }>, fromMs: number, toMs: number, oldest: number): RequestLogRecord[] {
  const records: RequestLogRecord[] = [];
  for (const entry of entries) {
    const record = decodeLogEntry(entry.message as Record<string, string>);
    if (record && record.time >= fromMs && record.time < toMs && record.time >= oldest) records.push(record);
  }
  return records;
}
