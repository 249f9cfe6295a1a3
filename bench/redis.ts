/**
 * The Redis the bench's gateways use for their Redis store: the server at `REDIS_URL` when it is set
 * (keys under a prefix of the run's own, removed at the end: other people may share that server), or
 * else a `redis-server` of the run's own on a free loopback port, without persistence, stopped at the end.
 * The cluster store's rows run on a Redis Cluster of the run's own (`openBenchRedisCluster`).
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { startRedisCluster } from '../spec/helpers/redis-cluster';

/** A Redis for one run; `close()` removes what the run wrote (or stops the server it started). */
export interface BenchRedis {
  /** `redis://host:port`; for a cluster, every node's URL, comma-separated (`REDIS_CLUSTER_NODES`). */
  url: string;
  /** Where it came from, for the report: `REDIS_URL`, `own redis-server` or `own Redis Cluster ...`. */
  source: string;
  /** A Redis Cluster (gateways get `url` as `REDIS_CLUSTER_NODES`), not one server (`REDIS_URL`). */
  cluster?: boolean;
  close(): Promise<void>;
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
 * Delete every key under `prefix`, a SCAN batch at a time.
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

/** A port the OS just handed out for 127.0.0.1 (free a moment ago). */
async function pickPort(): Promise<number> {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => probe.once('listening', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * The run's Redis (see the file comment).
 * @param prefix the run's key prefix, cleaned from a `REDIS_URL` server at the end
 * @returns the reason (`why`) instead, when `REDIS_URL` is unreachable or no redis-server can be started
 */
export async function openBenchRedis(prefix: string): Promise<BenchRedis | { why: string }> {
  const given = process.env.REDIS_URL;
  if (given) {
    if (!(await redisReachable(given))) return { why: `no Redis server at REDIS_URL ${given}` };
    return { url: given, source: 'REDIS_URL', close: () => cleanRedis(given, prefix).catch(() => undefined) };
  }
  const port = await pickPort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', '/tmp'], { stdio: 'ignore' });
  const failed = new Promise<string>((resolve) => {
    server.once('error', (err) => resolve(`redis-server could not start (${err.message}; apt-get install redis-server)`));
    server.once('exit', (code) => resolve(`redis-server exited (${code})`));
  });
  // Should the run end without `close()` (an error, Ctrl-C), the server goes with it.
  process.once('exit', () => server.kill('SIGKILL'));
  const url = `redis://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 100; attempt++) {
    const outcome = await Promise.race([failed, new Promise((resolve) => setTimeout(resolve, 50, null))]);
    if (typeof outcome === 'string') return { why: outcome };
    if (await redisReachable(url)) {
      return {
        url,
        source: 'own redis-server',
        close: async () => {
          if (server.exitCode !== null) return;
          await new Promise((resolve) => server.once('exit', resolve).kill('SIGTERM'));
        },
      };
    }
  }
  server.kill('SIGKILL');
  return { why: `redis-server not reachable on port ${port} within 5 s` };
}

/**
 * A Redis Cluster of the run's own: 3 primaries with a replica each on free loopback ports, started by
 * the tests' helper (spec/helpers/redis-cluster.ts, about 3 s), stopped and removed by `close()`.
 * @returns the reason (`why`) instead, when it cannot start (no `redis-cli`, a node that fails)
 */
export async function openBenchRedisCluster(): Promise<BenchRedis | { why: string }> {
  try {
    const cluster = await startRedisCluster({ primaries: 3, replicasPerPrimary: 1 });
    return { url: cluster.urls.join(','), source: 'own Redis Cluster (3 primaries, 3 replicas)', cluster: true, close: () => cluster.stop() };
  } catch (err) {
    return { why: (err as Error).message.split('\n')[0] };
  }
}
