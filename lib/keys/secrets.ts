/** Key secrets: generation, hashing, display. Secrets are never stored or logged in plain text. */
import crypto from 'node:crypto';

import { DEFAULT_KEY_PREFIX } from '../config/key-groups';

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

/**
 * `length` uniformly random base62 characters from the CSPRNG (secrets and request ids). One call draws
 * half as many bytes again as it needs (plus 8), so the bytes rejected below practically never cost a
 * second CSPRNG call (drawing exactly `length` bytes did for about half of all request ids).
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = crypto.randomBytes(length + (length >> 1) + 8);
    for (let i = 0; i < bytes.length && out.length < length; i++) {
      // 248 = 4 * 62: reject the top bytes so every character is equally likely.
      if (bytes[i] < 248) out += BASE62[bytes[i] % 62];
    }
  }
  return out;
}

/** CSPRNG bytes for ids, drawn 4 KiB at a time: one CSPRNG call per about 150 ids, not per id. */
const idPool = { bytes: Buffer.alloc(0), at: 0 };

/**
 * An id's `length` random base62 characters, uniformly distributed as randomBase62's, from a pool of
 * CSPRNG bytes each used once. For ids only (request ids, the Responses API's response and item ids:
 * they name something, they grant nothing; a stored response is served only to its own key): secrets
 * draw their own bytes (randomBase62), so none of theirs lingers in a pool.
 */
export function randomId(length: number): string {
  let out = '';
  while (out.length < length) {
    if (idPool.at >= idPool.bytes.length) {
      idPool.bytes = crypto.randomBytes(4096);
      idPool.at = 0;
    }
    const byte = idPool.bytes[idPool.at++];
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

