/**
 * The Redis store's connection: one server (`REDIS_URL`) or a Redis Cluster (`REDIS_CLUSTER_NODES`),
 * plain or TLS (`rediss://`, with `REDIS_TLS_CA` for a private CA), with the user and password the
 * URLs carry. Scripts run by EVALSHA, falling back to EVAL (which caches the script on the node that
 * ran it), so nothing has to be loaded on each node of a cluster first.
 */
import crypto from 'node:crypto';
import { createClient, createCluster, type RedisClientType, type RedisClusterType } from 'redis';
import { earliestClock, keepClock, measureClock, toServerMs } from './redis-clock';
import { redactUrl } from './redis-codec';

export interface RedisConnectionOptions {
  /** `redis[s]://[user:password@]host:port[/db]`: one server. */
  url?: string;
  /** URLs of some nodes of a Redis Cluster (the rest are discovered); used instead of `url`. */
  clusterNodes?: string[];
  /** PEM of the CA that signed the servers' certificates (`rediss://`); default: the system's CAs. */
  tlsCa?: string;
  /** Longest wait to open a connection, ms. Default 5000. */
  connectTimeoutMs?: number;
  /** Called with connection errors (the client reconnects by itself). */
  onError?: (err: Error) => void;
}

/** Commands the store sends; a cluster client routes each by its first key. */
export type RedisCommands = Pick<RedisClientType,
  'get' | 'getDel' | 'set' | 'del' | 'exists' | 'pExpire' | 'hGet' | 'hGetAll' | 'hSet' | 'sMembers' | 'sAdd' | 'xRange' | 'zRem' | 'hDel' | 'multi' | 'pTTL' | 'type' | 'zRangeWithScores' | 'zAdd' | 'xAdd' | 'rename' | 'decrBy'>;

export interface RedisConnection {
  readonly mode: 'single' | 'cluster';
  readonly commands: RedisCommands;
  /** Run a script (EVALSHA, or EVAL when the node does not have it yet). All `keys` must share a slot. */
  run(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** A client for each primary (to SCAN them all). */
  primaries(): Promise<RedisClientType[]>;
  /**
   * `localMs` (epoch ms, this process's clock) as the server's clock reads it, never later than it
   * is (redis-clock.ts; in a cluster, on the primary whose clock is earliest). Measured on connect,
   * on each reconnection and once a minute; no round trip here.
   */
  serverTime(localMs: number): number;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Delay before a reconnection attempt, ms: doubling from 50 up to 2000. */
const reconnectDelay = (retries: number) => Math.min(50 * 2 ** retries, 2000);

/**
 * Connect to Redis (one server or a cluster).
 * @throws Error when no server can be reached (the message names the URLs without their passwords)
 */
export async function connectRedis(options: RedisConnectionOptions): Promise<RedisConnection> {
  const urls = options.clusterNodes?.length ? options.clusterNodes : [options.url ?? 'redis://127.0.0.1:6379'];
  const tls = urls.some((url) => url.startsWith('rediss:'));
  const tlsOptions = tls ? { tls: true as const, ...(options.tlsCa ? { ca: options.tlsCa } : {}) } : {};
  const connectTimeout = options.connectTimeoutMs ?? 5000;
  let connected = false;
  // At start, an unreachable server is an error to report, not a wait; once connected, the client
  // reconnects by itself (requests fail meanwhile, so no control is silently skipped).
  const reconnectStrategy = (retries: number, cause: Error) => (connected ? reconnectDelay(retries) : cause);
  const described = urls.map(redactUrl).join(', ');
  if (!options.clusterNodes?.length) {
    // No offline queue: a command sent while disconnected fails at once (503) and never runs later, when
    // the guard (guard.ts) has already answered its request (an admission run then would hold credits
    // and count a request that nothing settles).
    const client = createClient({ url: urls[0], disableOfflineQueue: true, socket: { connectTimeout, reconnectStrategy, ...tlsOptions } }) as RedisClientType;
    client.on('error', (err: Error) => options.onError?.(err));
    try {
      await client.connect();
    } catch (err) {
      if (client.isOpen) client.destroy();
      throw new Error(`cannot connect to Redis at ${described}: ${(err as Error).message}`);
    }
    connected = true;
    const clock = await keepClock(() => measureClock(() => client.sendCommand(['TIME']))).catch((err: Error) => {
      client.destroy();
      throw new Error(`cannot read the clock of Redis at ${described}: ${err.message}`);
    });
    // A reconnection may reach another server (a failover behind one address): measure it again.
    client.on('ready', () => void clock.refresh());
    return {
      mode: 'single',
      commands: client,
      run: (script, keys, args) => runScript(client, script, keys, args),
      primaries: async () => [client],
      serverTime: (localMs) => toServerMs(localMs, clock.reading()),
      ping: async () => void (await client.ping()),
      close: async () => {
        clock.stop();
        if (client.isOpen) await client.close();
      },
    };
  }
  const { username, password } = new URL(urls[0]);
  const cluster = createCluster({
    rootNodes: urls.map((url) => ({ url })),
    defaults: {
      ...(username ? { username: decodeURIComponent(username) } : {}),
      ...(password ? { password: decodeURIComponent(password) } : {}),
      // A command for a node that is down fails at once (503) instead of waiting for it to return,
      // and never runs later (as for one server, above).
      disableOfflineQueue: true,
      socket: { connectTimeout, reconnectStrategy, ...tlsOptions },
    },
  }) as unknown as RedisClusterType;
  cluster.on('error', (err: Error) => options.onError?.(err));
  watchTopology(cluster, options.onError);
  try {
    await cluster.connect();
  } catch (err) {
    cluster.destroy();
    throw new Error(`cannot connect to the Redis Cluster at ${described}: ${(err as Error).message}`);
  }
  connected = true;
  const primaries = () => Promise.all(cluster.masters.map((node) => cluster.nodeClient(node) as Promise<RedisClientType>));
  // Each primary's clock is measured; a deadline is converted with the earliest, so it holds on the
  // node that runs the script whichever it is (nodes' clocks differ by little where NTP runs).
  const clock = await keepClock(async () => earliestClock(await Promise.all((await primaries())
    .map((client) => measureClock(() => client.sendCommand(['TIME'])))))).catch((err: Error) => {
    cluster.destroy();
    throw new Error(`cannot read the clocks of the Redis Cluster at ${described}: ${err.message}`);
  });
  return {
    mode: 'cluster',
    commands: cluster as unknown as RedisCommands,
    run: (script, keys, args) => runScript(cluster as unknown as RedisClientType, script, keys, args),
    primaries,
    serverTime: (localMs) => toServerMs(localMs, clock.reading()),
    ping: async () => void (await cluster.sendCommand(undefined, true, ['PING'])),
    close: async () => {
      clock.stop();
      if (cluster.isOpen) await cluster.close();
    },
  };
}

/** How often, at most, the cluster's slot map is read again while nodes report errors: 500 ms. */
const REDISCOVER_EVERY_MS = 500;

/**
 * The cluster client learns of a new primary only from a MOVED reply, which a node that is down never
 * sends: so while any node reports errors (a primary down, a failover under way), read the slot map
 * again from the nodes that answer, at most every 500 ms, until the replica that took over is used.
 * `rediscover` is the client's own routine (the one MOVED starts); it has no public name.
 */
function watchTopology(cluster: RedisClusterType, onError?: (err: Error) => void): void {
  const slots = (cluster as unknown as { _slots?: { rediscover?: (startWith: unknown) => Promise<void> } })._slots;
  if (typeof slots?.rediscover !== 'function') return;
  let last = 0;
  cluster.on('node-error', (err: Error) => {
    onError?.(err);
    const now = Date.now();
    if (now - last < REDISCOVER_EVERY_MS) return;
    last = now;
    const alive = cluster.masters.find((node) => node.client?.isReady)?.client;
    if (alive) slots.rediscover!.call(slots, alive).catch(() => undefined);
  });
}

/** The SHA-1 of each script, as Redis names it. */
const scriptShas = new Map<string, string>();

async function runScript(client: RedisClientType, script: string, keys: string[], args: string[]): Promise<unknown> {
  let sha = scriptShas.get(script);
  if (sha === undefined) {
    sha = crypto.createHash('sha1').update(script).digest('hex');
    scriptShas.set(script, sha);
  }
  try {
    return await client.evalSha(sha, { keys, arguments: args });
  } catch (err) {
    if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
  }
  return client.eval(script, { keys, arguments: args });
}
