/**
 * Bench child: the gateway with its whole pipeline on, in front of the fake upstream. The one bench
 * key goes through auth, alias resolution (requests name `sonnet`), the model whitelist (the key lists
 * the catalogue explicitly), the rate limit (set far above what a run sends, so it counts but never
 * refuses) and credit reservation (a monthly cap far above what a run spends). Logging is at the default
 * level (one JSON line per request) to the stdout the parent gives this process (a file).
 *
 * Usage: node dist/bench/gateway.js <upstream-url> <memory|redis|cluster>
 *   env REDIS_URL (for `redis`: the run's Redis, bench/redis.ts), REDIS_CLUSTER_NODES (for `cluster`: the
 *   run's Redis Cluster), BENCH_KEY_PREFIX (the Redis key prefix of this run).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, parseConfig } from '../lib/config';
import { startServerGateway } from '../lib/server';
import { serveChild } from './ipc';
import { BENCH_KEY } from './scenarios';

/** The config.json of a bench gateway: the shipped catalogue, one key with every control on. */
export function benchConfigObject(upstreamUrl: string): Record<string, unknown> {
  const shipped = loadConfig(undefined, {});
  return {
    upstream: { url: upstreamUrl, apiKeyEnv: 'BENCH_UPSTREAM_KEY', timeoutMs: 60_000 },
    models: shipped.models,
    aliases: shipped.aliases,
    keys: [{
      id: 'bench',
      key: BENCH_KEY,
      rateLimitPerMinute: 1_000_000_000,
      allowedModels: shipped.models.map((model) => model.id),
      monthlyCreditCap: 1_000_000_000,
    }],
  };
}

async function main(): Promise<void> {
  const [upstreamUrl, storeKind = 'memory'] = process.argv.slice(2);
  if (!upstreamUrl) throw new Error('usage: gateway.js <upstream-url> <memory|redis|cluster>');
  if (storeKind === 'redis' && !process.env.REDIS_URL) throw new Error('the redis store needs REDIS_URL (the run\'s Redis, bench/redis.ts)');
  if (storeKind === 'cluster' && !process.env.REDIS_CLUSTER_NODES) throw new Error('the cluster store needs REDIS_CLUSTER_NODES (the run\'s Redis Cluster, bench/redis.ts)');
  // The memory store's state file is this process's own, so runs never share usage.
  const stateFile = path.join(os.tmpdir(), `bench-gateway-${process.pid}.json`);
  const config = parseConfig(benchConfigObject(upstreamUrl), {
    PORT: '0',
    REDIS_URL: storeKind === 'redis' ? process.env.REDIS_URL : undefined,
    REDIS_CLUSTER_NODES: storeKind === 'cluster' ? process.env.REDIS_CLUSTER_NODES : undefined,
    REDIS_PREFIX: process.env.BENCH_KEY_PREFIX,
    GATEWAY_STATE_FILE: stateFile,
  });
  // Started as `npm start` starts it (lib/server.ts), so the figures are those of a deployment.
  const gateway = await startServerGateway(config, { host: '127.0.0.1' });
  const port = Number(new URL(gateway.url).port);
  serveChild(port, {
    info: () => ({ store: gateway.store.kind }),
    async close() {
      await gateway.close();
      fs.rmSync(stateFile, { force: true });
      return true;
    },
  });
}

main().catch((err) => {
  process.stderr.write(`bench gateway failed to start: ${(err as Error).stack}\n`);
  process.exit(1);
});
