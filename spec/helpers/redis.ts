/**
 * Redis for tests: the server at REDIS_URL (default redis://127.0.0.1:6379), a key prefix unique to
 * this run (other engineers' runs share the server), and clean-up of everything under it.
 * A test that needs Redis fails when it cannot reach it: it is never skipped.
 */
import crypto from 'node:crypto';
import { createClient } from 'redis';
import { RedisStore } from '../../lib/store/redis-store';
import type { Clock } from '../../lib/store/month';

export const TEST_REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** A prefix no other test run uses: `gwtest:<pid>:<random>:`. */
export function uniqueRedisPrefix(label = 'run'): string {
  return `gwtest:${label}:${process.pid}:${crypto.randomBytes(6).toString('hex')}:`;
}

/** A Redis store under a fresh prefix. @throws when Redis is unreachable (the test fails, not skips) */
export async function connectTestRedisStore(prefix = uniqueRedisPrefix(), clock?: Clock): Promise<RedisStore> {
  return RedisStore.connect({ url: TEST_REDIS_URL, prefix, clock });
}

/** Delete every key under `prefix`. */
export async function deleteRedisPrefix(prefix: string): Promise<void> {
  const client = createClient({ url: TEST_REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  try {
    for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) {
      if (batch.length > 0) await client.del(batch);
    }
  } finally {
    await client.close();
  }
}
