/**
 * The admin spend routes, added to the admin router:
 *
 * - `GET /usage?from&to[&keyId][&model]&groupBy=day|key|model|session|key,day`: usage totals over UTC
 *   days, in rows (every day of the range for `day`, with its models; keys or models by credits,
 *   highest first; for `key,day` each key with its `days`, as `day` has them; agent sessions from the
 *   request log for `session`, see session-usage.ts; per member (`user`: the keys' owner) or per team
 *   (`team`) over their keys, with the team's caps and this month's spend on its ledgers, team-usage.ts).
 * - `GET /requests?from&to[&keyId][&status][&sessionId]&format=ndjson|csv`: the request log over UTC days, streamed
 *   page by page from the store (`PAGE_RECORDS` at a time, waiting for the client to take each), so an
 *   export of any size holds one page in memory.
 */
import type { Router } from 'express';
import { errors } from '../http/errors';
import { writeWithBackpressure } from '../http/sse';
import { dayEnd, dayStart, daysBetween, monthsBetween } from '../store/usage-days';
import type { DailyUsageTotals, KeyStore, LedgerStore, RequestLogRecord, RequestLogStore } from '../store/types';
import type { Clock } from '../store/month';
import {
  checkKnownParameters, EXPORT_FORMATS, parseChoice, parseDayRange, parseGroupBy, parseIdParameter, parseStatusParameter, sumByDay,
  UsageAccumulator,
} from './usage-query';
import { sumBySession } from './session-usage';
import { sumByPeople } from './team-usage';
import type { TeamConfig } from '../config/people';

/** Request log records read from the store per page of an export. */
export const PAGE_RECORDS = 1000;

/** The columns of an export, in order (CSV header; NDJSON field order). */
export const REQUEST_LOG_COLUMNS: Array<keyof RequestLogRecord> = [
  'time', 'requestId', 'keyId', 'keyGroup', 'route', 'model', 'status', 'stopReason', 'inputTokens', 'outputTokens',
  'cacheCreationInputTokens', 'cacheReadInputTokens', 'credits', 'firstByteMs', 'durationMs', 'streamed', 'clientAborted',
  'sessionId', 'agentId',
  'upstreamTarget',
  'errorType', 'errorMessage', 'upstreamAttempts',
];

/** A record as exported: the same fields, `time` as ISO 8601. */
function exportedRecord(record: RequestLogRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of REQUEST_LOG_COLUMNS) out[column] = column === 'time' ? new Date(record.time).toISOString() : record[column] ?? null;
  return out;
}

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a text starting with
 * `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` so a spreadsheet does not run it as
 * a formula (OWASP, CSV injection).
 */
export function formatCsvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}


export interface SpendRoutesOptions {
  store: KeyStore & LedgerStore & RequestLogStore;
  /** Epoch ms (today's date for default ranges). */
  now: Clock;
  /** The teams (config `teams[]`, read per request) whose names and caps `groupBy=team|user` shows. Default none. */
  teams?: () => readonly TeamConfig[];
}

/** Add the spend routes to the admin `router`. */
export function addSpendRoutes(router: Router, options: SpendRoutesOptions): void {
  const { store } = options;

  router.get('/usage', async (req, res) => {
    const query = req.query as Record<string, unknown>;
    checkKnownParameters(query, ['from', 'to', 'keyId', 'model', 'groupBy']);
    const { from, to } = parseDayRange(query, options.now());
    const groupBy = parseGroupBy(query);
    const keyId = parseIdParameter(query, 'keyId');
    const model = parseIdParameter(query, 'model');
    const keys = keyId === undefined ? await store.listKeys() : [await store.getKey(keyId)];
    if (keys[0] === null) throw errors.notFound(`keyId: no key with id "${keyId!.slice(0, 100)}"`);
    if (groupBy === 'session') {
      // From the request log, not the day totals: the totals are the rows' own sums.
      const sessions = await sumBySession(store, dayStart(from), dayEnd(to), { keyId, model });
      const sums = new UsageAccumulator();
      for (const row of sessions) sums.add(row);
      res.json({ from, to, groupBy, keyId: keyId ?? null, model: model ?? null, rows: sessions, totals: sums.sums() });
      return;
    }
    const months = monthsBetween(from, to);
    const perKey = await Promise.all(keys.map(async (key) => {
      const rows = (await Promise.all(months.map((month) => store.getDailyUsage(key!.id, month)))).flat();
      return { key: key!, rows: rows.filter((row) => row.day >= from && row.day <= to && (model === undefined || row.model === model)) };
    }));
    const all: DailyUsageTotals[] = perKey.flatMap(({ rows }) => rows);
    const totals = new UsageAccumulator();
    for (const row of all) totals.add(row);
    let rows: unknown[];
    if (groupBy === 'day') {
      rows = sumByDay(all, daysBetween(from, to));
    } else if (groupBy === 'key' || groupBy === 'key,day') {
      const days = groupBy === 'key,day' ? daysBetween(from, to) : undefined;
      rows = perKey.filter(({ rows: keyRows }) => keyRows.length > 0).map(({ key, rows: keyRows }) => {
        const sums = new UsageAccumulator();
        for (const row of keyRows) sums.add(row);
        // One call for spend by key and by day: each key with every day of the range, as `day` has them.
        return { keyId: key.id, keyName: key.name, monthlyCreditCap: key.monthlyCreditCap, ...sums.sums(), ...(days ? { days: sumByDay(keyRows, days) } : {}) };
      }).sort((a, b) => b.credits - a.credits || a.keyId.localeCompare(b.keyId));
    } else if (groupBy === 'user' || groupBy === 'team') {
      rows = await sumByPeople(store, perKey, groupBy, options.teams?.() ?? [], options.now());
    } else {
      const byModel = new Map<string, UsageAccumulator>();
      for (const row of all) {
        const sums = byModel.get(row.model) ?? new UsageAccumulator();
        sums.add(row);
        byModel.set(row.model, sums);
      }
      rows = [...byModel].map(([id, sums]) => ({ model: id, ...sums.sums() })).sort((a, b) => b.credits - a.credits || a.model.localeCompare(b.model));
    }
    res.json({ from, to, groupBy, keyId: keyId ?? null, model: model ?? null, rows, totals: totals.sums() });
  });

  router.get('/requests', async (req, res) => {
    const query = req.query as Record<string, unknown>;
    checkKnownParameters(query, ['from', 'to', 'keyId', 'status', 'sessionId', 'format']);
    const { from, to } = parseDayRange(query, options.now());
    const keyId = parseIdParameter(query, 'keyId');
    const status = parseStatusParameter(query, 'status');
    const sessionId = parseIdParameter(query, 'sessionId');
    const format = parseChoice(query, 'format', EXPORT_FORMATS);
    const wanted = (record: RequestLogRecord) => (keyId === undefined || record.keyId === keyId) && (status === undefined || record.status === status)
      && (sessionId === undefined || record.sessionId === sessionId);

    // The first page is read before the head is sent, so a store that cannot answer gets a real status.
    let page = await store.readRequestLog(dayStart(from), dayEnd(to), null, PAGE_RECORDS);
    if (format === 'csv') {
      res.setHeader('content-type', 'text/csv; charset=utf-8');
      res.setHeader('content-disposition', `attachment; filename="requests-${from}-${to}.csv"`);
    } else {
      res.setHeader('content-type', 'application/x-ndjson; charset=utf-8');
    }
    res.status(200);
    try {
      if (format === 'csv') await writeWithBackpressure(res, `${REQUEST_LOG_COLUMNS.join(',')}\r\n`);
      for (;;) {
        let chunk = '';
        for (const record of page.records) {
          if (!wanted(record)) continue;
          const row = exportedRecord(record);
          chunk += format === 'csv' ? `${REQUEST_LOG_COLUMNS.map((column) => formatCsvField(row[column])).join(',')}\r\n` : `${JSON.stringify(row)}\n`;
        }
        if (chunk) await writeWithBackpressure(res, chunk);
        if (page.cursor === null || res.destroyed) break;
        page = await store.readRequestLog(dayStart(from), dayEnd(to), page.cursor, PAGE_RECORDS);
      }
      res.end();
    } catch {
      // Mid-export the head is gone: cut the connection so the export cannot pass for complete.
      res.destroy();
    }
  });
}
