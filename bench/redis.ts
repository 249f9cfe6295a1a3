/**
 * The Redis server the benchmarks' gateways use for their Redis store (`REDIS_URL`, default the local
 * one), and the key prefix each run writes under, so a run can remove what it wrote and nothing else
 * (other engineers share the server).
 */
import net from 'node:net';

/** `REDIS_URL`, or the local server. */
export function benchRedisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** A key prefix of this process's own: `bench-<pid>-<epoch ms>:`. Gateways get it as `BENCH_KEY_PREFIX`. */
export function benchKeyPrefix(): string {
  return `bench-${process.pid}-${Date.now()}:`;
}

/** Whether something accepts TCP connections at the URL's host and port (within 1 s). */
export function redisReachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port || 6379), hostname);
    socket.setTimeout(1000, () => socket.destroy());
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('close', () => resolve(false));
  });
}

/**
 * Delete every key under `prefix`, a SCAN batch at a time (the tests clean up their prefixes through
 * this too: spec/helpers/redis.ts).
 * @throws Error when the server cannot be reached or a command fails
 */
export async function cleanRedis(url: string, prefix: string): Promise<void> {
  const { createClient } = await import('redis');
  const redis = createClient({ url });
  // An error event with no listener would end the process; the failure reaches the caller as a rejection.
  redis.on('error', () => undefined);
  await redis.connect();
  try {
    for await (const batch of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (batch.length > 0) await redis.del(batch);
    }
  } finally {
    await redis.close();
  }
}
