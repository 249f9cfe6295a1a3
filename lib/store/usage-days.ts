/**
 * UTC days, the unit of the daily usage totals and the request log's date ranges. A day is named
 * `YYYY-MM-DD`; it starts at 00:00:00.000 UTC.
 *
 * Usage is booked when a request settles. A request reserved in the last seconds of a month and
 * settled in the next is booked on the last millisecond of the month it was reserved in (its credits
 * count against that month's cap), so the days of a month always add up to the month.
 */
import { utcMonth } from './month';

const DAY_MS = 24 * 60 * 60 * 1000;

/** The last day named by {@link utcDay}: its first and after-last epoch ms, and its name. */
let lastDay = { start: 0, end: 0, name: '' };

/**
 * The `YYYY-MM-DD` of the UTC day holding `epochMs`. Kept for speed: the last day named is reused
 * while `epochMs` falls in it (every settlement names its day; formatting a Date each time cost
 * about 3 µs per request, RESULTS.md).
 */
export function utcDay(epochMs: number): string {
  if (epochMs >= lastDay.start && epochMs < lastDay.end) return lastDay.name;
  const name = new Date(epochMs).toISOString().slice(0, 10);
  const start = Math.floor(epochMs / DAY_MS) * DAY_MS;
  if (Number.isFinite(start)) lastDay = { start, end: start + DAY_MS, name };
  return name;
}

/** Whether `day` is a real calendar day written `YYYY-MM-DD` (2025-02-30 is not). */
export function isUtcDay(day: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return false;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  return Number.isFinite(ms) && utcDay(ms) === day;
}

/** Epoch ms of 00:00 UTC of `day` (`YYYY-MM-DD`). */
export function dayStart(day: string): number {
  return Date.parse(`${day}T00:00:00.000Z`);
}

/** Epoch ms of 00:00 UTC of the day after `day`. */
export function dayEnd(day: string): number {
  return dayStart(day) + DAY_MS;
}

/** Days from `from` to `to`, both included (`from` <= `to`). */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let ms = dayStart(from); ms <= dayStart(to); ms += DAY_MS) days.push(utcDay(ms));
  return days;
}

/** The `YYYY-MM` months that the days `from`..`to` touch, in order. */
export function monthsBetween(from: string, to: string): string[] {
  const months: string[] = [];
  for (const day of daysBetween(from, to)) {
    const month = day.slice(0, 7);
    if (months[months.length - 1] !== month) months.push(month);
  }
  return months;
}

/**
 * When usage settled at `at` (epoch ms) is booked for a reservation of `month`: `at` itself when it
 * falls in that month, else the month's first or last millisecond, whichever is nearer.
 */
export function bookingTime(at: number, month: string): number {
  if (utcMonth(at) === month) return at;
  const start = Date.parse(`${month}-01T00:00:00.000Z`);
  if (at < start) return start;
  const [year, monthNumber] = month.split('-').map(Number);
  return Date.UTC(year, monthNumber, 1) - 1;
}
