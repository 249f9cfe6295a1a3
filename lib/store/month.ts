/**
 * UTC calendar months, the unit of the monthly credit cap. A month starts at 00:00:00.000 UTC on the
 * 1st; its bucket is named `YYYY-MM`. Every caller takes the time from an injectable clock so tests
 * can move across a month boundary.
 */

/** Current time in epoch milliseconds. */
export type Clock = () => number;

/** The real clock. */
export const systemClock: Clock = () => Date.now();

/** The `YYYY-MM` bucket of the UTC month holding `epochMs`, e.g. `2025-07`. */
export function utcMonth(epochMs: number): string {
  const date = new Date(epochMs);
  return `${date.getUTCFullYear()}-${String(date.getUTCMonth() + 1).padStart(2, '0')}`;
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
