/**
 * Credits are kept as integer micro-credits (1 credit = 1 000 000) inside the stores, so sums and the
 * comparison with a cap are exact (floating-point sums of prices such as 0.3 per million tokens would
 * drift and let a reservation that fits exactly fail, or one that does not fit pass).
 */

const MICRO = 1_000_000;

/** Credits -> micro-credits, rounded up (a reservation never holds less than asked). */
export function toMicroCreditsCeil(credits: number): number {
  return Math.ceil(Math.round(credits * MICRO * 1000) / 1000);
}

/** Credits -> micro-credits, rounded to the nearest (settled charges). */
export function toMicroCredits(credits: number): number {
  return Math.round(credits * MICRO);
}

/** Micro-credits -> credits. */
export function fromMicroCredits(micro: number): number {
  return micro / MICRO;
}
