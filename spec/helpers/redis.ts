/**
 * Redis for tests: the server at REDIS_URL (default redis://127.0.0.1:6379), a key prefix unique to
 * this run (other engineers' runs share the server), and clean-up of everything under it.
 * A test that needs Redis fails when it cannot reach it: it is never skipped.
 */
import crypto from 'node:crypto';
import { cleanRedis } from '../../bench/redis';
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

/** Delete every key under `prefix` (the bench's clean-up, bench/redis.ts). */
export function deleteRedisPrefix(prefix: string): Promise<void> {
  return cleanRedis(TEST_REDIS_URL, prefix);
}
