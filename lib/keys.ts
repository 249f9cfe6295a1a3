/** Key secrets: generation, hashing, display. Secrets are never stored or logged in plain text. */
import crypto from 'node:crypto';

import { DEFAULT_KEY_PREFIX } from './key-groups';

/** Hex SHA-256 of a secret (UTF-8). One-shot `crypto.hash` (Node >= 20.12): half the cost of a Hash object. */
export function hashSecret(secret: string): string {
  return crypto.hash('sha256', secret, 'hex');
}

/** A new random secret: the prefix and 40 base62 characters (~238 bits). */
export function generateSecret(prefix = DEFAULT_KEY_PREFIX): string {
  return prefix + randomBase62(40);
}

/** Last 4 characters of a secret, the only part ever shown or logged. */
export function lastFour(secret: string): string {
  return secret.slice(-4);
}

/** Constant-time comparison of two hex digests of equal length. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && crypto.timingSafeEqual(left, right);
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` uniformly random base62 characters from the CSPRNG (secrets and request ids). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of crypto.randomBytes(length)) {
      // 248 = 4 * 62: reject the top bytes so every character is equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

