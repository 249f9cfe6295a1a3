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
