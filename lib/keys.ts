/** Key secrets: generation, hashing, display. Secrets are never stored or logged in plain text. */
import crypto from 'node:crypto';

/** Prefix of the basic key group (spec, Authentication rule 1). */
export const KEY_PREFIX = 'sk-cs4-';

/** Hex SHA-256 of a secret (UTF-8). One-shot `crypto.hash` (Node >= 20.12): half the cost of a Hash object. */
export function hashSecret(secret: string): string {
  return crypto.hash('sha256', secret, 'hex');
}

/** A new random secret: the prefix and 40 base62 characters (~238 bits). */
export function generateSecret(prefix = KEY_PREFIX): string {
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

/** `length` uniformly random base62 characters (fresh CSPRNG bytes: for secrets). */
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

/** Random bytes drawn ahead for {@link randomIdBase62}, so each id does not cost a CSPRNG call. */
const idBytes = Buffer.alloc(4096);
let idOffset = idBytes.length;

/**
 * `length` uniformly random base62 characters for identifiers that are not secrets (request ids):
 * the same CSPRNG as {@link randomBase62}, read 4 KiB at a time (a `randomBytes` call per request was
 * about 2 % of the gateway's CPU in the benchmark).
 */
export function randomIdBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    if (idOffset === idBytes.length) {
      crypto.randomFillSync(idBytes);
      idOffset = 0;
    }
    const byte = idBytes[idOffset++];
    // 248 = 4 * 62: reject the top bytes so every character is equally likely.
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}
