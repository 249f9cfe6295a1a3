/**
 * UTC calendar months, the unit of the monthly credit cap. A month starts at 00:00:00.000 UTC on the
 * 1st; its bucket is named `YYYY-MM`. Every caller takes the time from an injectable clock so tests
 * can move across a month boundary.
 */

/** Current time in epoch milliseconds. */
export type Clock = () => number;

/** The real clock. */
export const systemClock: Clock = () => Date.now();

/** The last month named by {@link utcMonth}: its first and after-last epoch ms, and its name. */
let lastMonth = { start: 0, end: 0, name: '' };

/**
 * The `YYYY-MM` bucket of the UTC month holding `epochMs`, e.g. `2025-07`. The last month named is
 * reused while `epochMs` falls in it (every admission and settlement names the month).
 */
export function utcMonth(epochMs: number): string {
  if (epochMs >= lastMonth.start && epochMs < lastMonth.end) return lastMonth.name;
  const date = new Date(epochMs);
  const name = `${date.getUTCFullYear()}-${String(date.getUTCMonth() + 1).padStart(2, '0')}`;
  if (Number.isFinite(epochMs)) lastMonth = { start: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1), end: nextUtcMonthStart(epochMs), name };
  return name;
}

/** Epoch ms of 00:00 UTC on the 1st of the month after the one holding `epochMs` (when the cap resets). */
export function nextUtcMonthStart(epochMs: number): number {
  const date = new Date(epochMs);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

/** Whether `month` is a well-formed `YYYY-MM` bucket name. */
export function isUtcMonth(month: string): boolean {
  return /^\d{4}-(0[1-9]|1[0-2])$/.test(month);
}
