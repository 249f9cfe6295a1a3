/** The bench's Redis clean-up (bench/redis.ts): a run removes what it wrote under its prefix, and nothing else. */
import { expect } from 'chai';
import { createClient } from 'redis';
import { benchKeyPrefix, cleanRedis, redisReachable } from '../../bench/redis';
import { deleteRedisPrefix, TEST_REDIS_URL, uniqueRedisPrefix } from '../helpers/redis';

describe('bench Redis clean-up (bench/redis.ts)', () => {
  const client = createClient({ url: TEST_REDIS_URL });
  const other = uniqueRedisPrefix('bench-redis');
  before(async () => {
    client.on('error', () => undefined);
    await client.connect();
  });
  after(async () => {
    await deleteRedisPrefix(other);
    await client.close();
  });

  it('names a prefix of this process, ending in a colon', () => {
    expect(benchKeyPrefix()).to.match(new RegExp(`^bench-${process.pid}-\\d+:$`));
  });

  it('deletes every key under the run prefix, past one batch of a thousand, and leaves other keys', async () => {
    const prefix = `${benchKeyPrefix()}${other}`;
    const keys = Array.from({ length: 1_205 }, (_, i) => `${prefix}k${i}`);
    for (let i = 0; i < keys.length; i += 500) await client.mSet(keys.slice(i, i + 500).map((key) => [key, '1'] as [string, string]));
    await client.set(`${other}kept`, '1');

    await cleanRedis(TEST_REDIS_URL, prefix);

    expect(await client.exists(keys)).to.equal(0);
    expect(await client.get(`${other}kept`)).to.equal('1');
  });

  it('tells a reachable server from a closed port', async () => {
    expect(await redisReachable(TEST_REDIS_URL)).to.equal(true);
    expect(await redisReachable('redis://127.0.0.1:1')).to.equal(false);
  });
});
