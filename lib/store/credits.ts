/**
 * Credits are kept as integer nano-credits (1 credit = 1 000 000 000 units) inside the stores, so sums
 * and the comparison with a cap are exact: floating-point sums of prices such as 0.3 per million
 * tokens would drift and let a reservation that fits exactly fail, or one that does not fit pass.
 * One token at a price with up to three decimals per million is a whole number of units, so a charge
 * is not rounded at all. Exact up to 2^53 units: about 9 million credits per key and month.
 */

const UNITS_PER_CREDIT = 1_000_000_000;

/** Credits -> units, rounded up (a reservation never holds less than asked). */
export function toCreditUnitsCeil(credits: number): number {
  return Math.ceil(Math.round(credits * UNITS_PER_CREDIT * 1000) / 1000);
}

/** Credits -> units, rounded to the nearest (settled charges). */
export function toCreditUnits(credits: number): number {
  return Math.round(credits * UNITS_PER_CREDIT);
}

/** Units -> credits. */
export function fromCreditUnits(units: number): number {
  return units / UNITS_PER_CREDIT;
}

/** The figures of a settlement (a UsageEntry's counts and credits). */
interface SettledFigures {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  credits: number;
}

/** Figures a store refuses to settle (checkSettledFigures): a RangeError no retry can mend. */
export class SettlementRefusedError extends RangeError {}

/**
 * Check a settlement's figures before a store changes anything: token counts are non-negative safe
 * integers and the credits a non-negative amount whose units are exact (at most 2^53 units). The
 * settlement bills impossible usage at the hold (lib/billing/usage-sanity.ts), so this only fails on a bug;
 * a store that ran on would leave a request unbilled (Redis: the hold gone, then HINCRBY refusing a
 * float) or a key blocked for the month (memory).
 * @throws SettlementRefusedError naming the first field out of range
 */
export function checkSettledFigures(figures: SettledFigures): void {
  for (const field of ['inputTokens', 'outputTokens', 'cacheCreationInputTokens', 'cacheReadInputTokens'] as const) {
    const value = figures[field];
    if (!Number.isSafeInteger(value) || value < 0) throw new SettlementRefusedError(`settlement refused: ${field} ${value} is not a non-negative integer`);
  }
  const units = toCreditUnits(figures.credits);
  if (!Number.isSafeInteger(units) || units < 0) throw new SettlementRefusedError(`settlement refused: credits ${figures.credits} out of range`);
}
