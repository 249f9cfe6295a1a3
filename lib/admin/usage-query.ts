/**
 * The query parameters of the admin spend routes (`GET /admin/v1/usage`, `GET /admin/v1/requests`)
 * and the sums behind `/usage`. Each parameter is checked on its own; a bad one is a 400 whose message
 * starts with its name. Sums of credits are made in integer credit units (lib/store/credits.ts), so
 * the totals of a range are exactly the sums of its days.
 */
import { errors } from '../http/errors';
import { fromCreditUnits, toCreditUnits } from '../store/credits';
import { dayStart, daysBetween, isUtcDay, utcDay } from '../store/usage-days';
import type { DailyUsageTotals } from '../store/types';

/** Longest range of days one query may span. */
export const MAX_RANGE_DAYS = 400;
/** Days a range covers when `from` is not given: the 30 days up to `to`. */
export const DEFAULT_RANGE_DAYS = 30;

export const GROUP_BY = ['day', 'key', 'model', 'session', 'user', 'team'] as const;
/** The groupings `/usage` makes: one of GROUP_BY, or keys each with its days (`key,day`). */
export type GroupBy = (typeof GROUP_BY)[number] | 'key,day';
export const EXPORT_FORMATS = ['ndjson', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

type Query = Record<string, unknown>;

/** Counts summed over requests (credits in credits). */
export interface UsageSums {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  credits: number;
}

/** 400 unless every parameter of `query` is one of `allowed`. */
export function checkKnownParameters(query: Query, allowed: readonly string[]): void {
  const unknown = Object.keys(query).find((name) => !allowed.includes(name));
  if (unknown !== undefined) throw errors.invalidRequest(`${unknown.slice(0, 64)}: unknown parameter (parameters: ${allowed.join(', ')})`);
}

/** A parameter given once as a string, or undefined; 400 when given twice or as an object. */
function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw errors.invalidRequest(`${name}: give it once, as a plain value`);
  return value;
}

/** A UTC day parameter, or undefined when absent. */
function dayParameter(query: Query, name: string): string | undefined {
  const value = single(query, name);
  if (value !== undefined && !isUtcDay(value)) {
    throw errors.invalidRequest(`${name}: "${value.slice(0, 40)}" is not a UTC day; write YYYY-MM-DD, e.g. 2025-07-31`);
  }
  return value;
}

/**
 * `from` and `to` (UTC days, both included): `to` defaults to today, `from` to 30 days up to `to`.
 * @throws GatewayError 400 naming `from` or `to` (not a day; `from` after `to`; over 400 days)
 */
export function parseDayRange(query: Query, now: number): { from: string; to: string } {
  const to = dayParameter(query, 'to') ?? utcDay(now);
  const from = dayParameter(query, 'from') ?? utcDay(dayStart(to) - (DEFAULT_RANGE_DAYS - 1) * 86_400_000);
  if (from > to) throw errors.invalidRequest(`from: ${from} is after to (${to})`);
  const days = Math.round((dayStart(to) - dayStart(from)) / 86_400_000) + 1;
  if (days > MAX_RANGE_DAYS) throw errors.invalidRequest(`to: the range ${from}..${to} spans ${days} days; at most ${MAX_RANGE_DAYS}`);
  return { from, to };
}

/** A parameter that must be one of `choices` (default the first). */
export function parseChoice<T extends string>(query: Query, name: string, choices: readonly T[]): T {
  const value = single(query, name);
  if (value === undefined) return choices[0];
  if (!(choices as readonly string[]).includes(value)) throw errors.invalidRequest(`${name}: "${value.slice(0, 40)}" is not one of ${choices.join(', ')}`);
  return value as T;
}

/**
 * `groupBy`: one of GROUP_BY (default `day`), or `key` and `day` together, as `key,day` (either order)
 * or the parameter given twice (`groupBy=key&groupBy=day`).
 * @throws GatewayError 400 naming `groupBy` for any other value or combination
 */
export function parseGroupBy(query: Query): GroupBy {
  const value = query.groupBy;
  if (value === undefined) return 'day';
  const given = Array.isArray(value) && value.length <= 4 && value.every((item) => typeof item === 'string') ? value.join(',') : value;
  if (typeof given !== 'string') throw errors.invalidRequest('groupBy: give it as a plain value, e.g. groupBy=key,day');
  const names = [...new Set(given.split(',').map((name) => name.trim()))].sort();
  if (names.length === 1 && (GROUP_BY as readonly string[]).includes(names[0])) return names[0] as GroupBy;
  if (names.length === 2 && names[0] === 'day' && names[1] === 'key') return 'key,day';
  throw errors.invalidRequest(`groupBy: "${given.slice(0, 40)}" is not one of ${GROUP_BY.join(', ')}, or key,day`);
}

/** An optional id-like parameter (key id, model id, session id): 1 to 200 characters. */
export function parseIdParameter(query: Query, name: string): string | undefined {
  const value = single(query, name);
  if (value !== undefined && (value.length === 0 || value.length > 200)) throw errors.invalidRequest(`${name}: must be 1 to 200 characters`);
  return value;
}

/** An optional HTTP status parameter (100 to 599). */
export function parseStatusParameter(query: Query, name: string): number | undefined {
  const value = single(query, name);
  if (value === undefined) return undefined;
  if (!/^[1-5]\d\d$/.test(value)) throw errors.invalidRequest(`${name}: "${value.slice(0, 40)}" is not an HTTP status (100 to 599)`);
  return Number(value);
}

/** Sums in credit units while adding, credits when done. */
export class UsageAccumulator {
  requests = 0;
  inputTokens = 0;
  outputTokens = 0;
  cacheCreationInputTokens = 0;
  cacheReadInputTokens = 0;
  private units = 0;

  add(row: Omit<UsageSums, never>): void {
    this.requests += row.requests;
    this.inputTokens += row.inputTokens;
    this.outputTokens += row.outputTokens;
    this.cacheCreationInputTokens += row.cacheCreationInputTokens;
    this.cacheReadInputTokens += row.cacheReadInputTokens;
    this.units += toCreditUnits(row.credits);
  }

  sums(): UsageSums {
    return {
      requests: this.requests, inputTokens: this.inputTokens, outputTokens: this.outputTokens,
      cacheCreationInputTokens: this.cacheCreationInputTokens, cacheReadInputTokens: this.cacheReadInputTokens, credits: fromCreditUnits(this.units),
    };
  }
}

/** A day of usage: the sums and, per model, the same sums (models sorted by credits, highest first). */
export type DayRow = { day: string } & UsageSums & { models: Array<{ model: string } & UsageSums> };

/**
 * Day rows for every day of `days` (zeros where nothing was used), from the day totals of one or
 * more keys (`rows` may hold several keys' rows of the same day and model).
 */
export function sumByDay(rows: DailyUsageTotals[], days: string[]): DayRow[] {
  const byDay = new Map<string, { all: UsageAccumulator; models: Map<string, UsageAccumulator> }>();
  for (const day of days) byDay.set(day, { all: new UsageAccumulator(), models: new Map() });
  for (const row of rows) {
    const bucket = byDay.get(row.day);
    if (!bucket) continue;
    bucket.all.add(row);
    const model = bucket.models.get(row.model) ?? new UsageAccumulator();
    model.add(row);
    bucket.models.set(row.model, model);
  }
  return days.map((day) => {
    const bucket = byDay.get(day)!;
    const models = [...bucket.models].map(([model, sums]) => ({ model, ...sums.sums() }))
      .sort((a, b) => b.credits - a.credits || a.model.localeCompare(b.model));
    return { day, ...bucket.all.sums(), models };
  });
}

/** The days of a month (`YYYY-MM`). */
export function daysOfMonth(month: string): string[] {
  const [year, monthNumber] = month.split('-').map(Number);
  return daysBetween(`${month}-01`, utcDay(Date.UTC(year, monthNumber, 1) - 1));
}
