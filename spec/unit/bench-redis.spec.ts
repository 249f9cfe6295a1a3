/**
 * The bench's Redis (bench/redis.ts): on a shared server a run removes what it wrote under its prefix,
 * and nothing else; without one it brings its own.
 */
import { expect } from 'chai';
import { createClient } from 'redis';
import { benchKeyPrefix, cleanRedis, openBenchRedis, redisReachable } from '../../bench/redis';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';

describe('bench Redis (bench/redis.ts)', () => {
  let client: ReturnType<typeof createClient>;
  const other = uniqueRedisPrefix('bench-redis');
  before(async () => {
    client = createClient({ url: testRedisUrl() });
    client.on('error', () => undefined);
    await client.connect();
  });
  after(async () => {
    await deleteRedisPrefix(other);
    await client.close();
  });

  it('deletes every key under the run prefix, past one batch of a thousand, and leaves other keys', async () => {
    const prefix = `${benchKeyPrefix()}${other}`;
    const keys = Array.from({ length: 1_205 }, (_, i) => `${prefix}k${i}`);
    for (let i = 0; i < keys.length; i += 500) await client.mSet(keys.slice(i, i + 500).map((key) => [key, '1'] as [string, string]));
    await client.set(`${other}kept`, '1');

    await cleanRedis(testRedisUrl(), prefix);

    expect(await client.exists(keys)).to.equal(0);
    expect(await client.get(`${other}kept`)).to.equal('1');
  });

  it('uses the Redis at REDIS_URL, cleaning the run prefix at the end, and says so when it cannot reach it', async () => {
    const saved = process.env.REDIS_URL;
    try {
      process.env.REDIS_URL = testRedisUrl();
      const prefix = `${benchKeyPrefix()}${other}`;
      const redis = await openBenchRedis(prefix);
      if ('why' in redis) throw new Error(redis.why);
      expect(redis).to.include({ url: testRedisUrl(), source: 'REDIS_URL' });
      await client.set(`${prefix}k`, '1');
      await redis.close();
      expect(await client.exists(`${prefix}k`)).to.equal(0);
      process.env.REDIS_URL = 'redis://127.0.0.1:1';
      expect(await openBenchRedis(prefix)).to.deep.equal({ why: 'no Redis server at REDIS_URL redis://127.0.0.1:1' });
    } finally {
      if (saved === undefined) delete process.env.REDIS_URL;
      else process.env.REDIS_URL = saved;
    }
  });

  it('without REDIS_URL starts a redis-server of its own on a free port, and stops it', async () => {
    const redis = await openBenchRedis(benchKeyPrefix());
    if ('why' in redis) throw new Error(redis.why);
    try {
      expect(redis.source).to.equal('own redis-server');
      expect(new URL(redis.url).port).to.not.equal('6379');
      expect(await redisReachable(redis.url)).to.equal(true);
    } finally {
      await redis.close();
    }
    expect(await redisReachable(redis.url)).to.equal(false);
  });
});
