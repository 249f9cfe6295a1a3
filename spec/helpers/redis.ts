/**
 * Redis for tests: the server of this run (`TEST_REDIS_URL`: the disposable one spec/setup.ts starts, or
 * the one the user named), a key prefix unique to this run, and clean-up of everything under it.
 * A test that needs Redis fails when it cannot reach it: it is never skipped.
 */
import crypto from 'node:crypto';
import { createClient } from 'redis';
import { RedisStore } from '../../lib/store/redis-store';
import type { Clock } from '../../lib/store/month';

/**
 * The URL of this run's Redis.
 * @throws Error when the suite's set-up did not run (mocha started without `.mocharc.json`) and TEST_REDIS_URL is unset
 */
export function testRedisUrl(): string {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('TEST_REDIS_URL is not set: run the tests with `npm test` (it starts a Redis of its own), or mocha with `--require dist/spec/setup.js`, or set TEST_REDIS_URL');
  return url;
}

/** A prefix no other test run uses: `gwtest:<label>:<pid>:<random>:`. */
export function uniqueRedisPrefix(label = 'run'): string {
  return `gwtest:${label}:${process.pid}:${crypto.randomBytes(6).toString('hex')}:`;
}

/** A Redis store under a fresh prefix. @throws when Redis is unreachable (the test fails, not skips) */
export async function connectTestRedisStore(prefix = uniqueRedisPrefix(), clock?: Clock): Promise<RedisStore> {
  return RedisStore.connect({ url: testRedisUrl(), prefix, clock });
}

/**
 * Delete every key under `prefix` (a test writes a few hundred at most: gathered, then unlinked at once).
 * @throws Error when the server cannot be reached or a command fails
 */
export async function deleteRedisPrefix(prefix: string): Promise<void> {
  const redis = await createClient({ url: testRedisUrl() }).on('error', () => undefined).connect();
  try {
    const keys: string[] = [];
    for await (const batch of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...batch);
    if (keys.length > 0) await redis.unlink(keys);
  } finally {
    redis.destroy();
  }
}
