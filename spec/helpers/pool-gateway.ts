/**
 * Test harness for upstream pools: a gateway whose upstream lists several targets (each a fake
 * upstream on loopback, or a port nothing listens on), and what a test asks of it afterwards.
 */
import { parseConfig } from '../../lib/config';
import { waitForAfterResponseSteps } from '../../lib/app';
import { startGateway, type RunningGateway } from '../../lib/server';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { createCapturingLogger, testConfigObject } from './gateway';

/** Credentials of the pool's targets (the env variables the test config names). */
export const TARGET_SECRETS = { POOL_KEY_A: 'pool-secret-a-never-shown', POOL_KEY_B: 'pool-secret-b-never-shown' } as const;

export interface PoolTarget {
  id: string;
  url: string;
  apiKeyEnv?: keyof typeof TARGET_SECRETS;
  weight?: number;
  models?: string[];
}

export interface PoolGateway {
  running: RunningGateway;
  url: string;
  logLines: Array<Record<string, any>>;
  /** The key's ledger totals this month (after the finish steps of closed requests). */
  ledger(keyId?: string): Promise<{ requests: number; inputTokens: number; outputTokens: number }>;
  close(): Promise<void>;
}

/**
 * Start a gateway on `targets` (config `upstream.targets`) with the test keys.
 * @param upstream more fields of the `upstream` section (breaker, retries, timeouts)
 * @param options.overrides top-level config fields (key groups, models, keys); options.env the config's env (ADMIN_TOKEN)
 */
export async function startPoolGateway(
  targets: PoolTarget[], upstream: Record<string, unknown> = {}, store?: GatewayStore,
  options: { overrides?: Record<string, unknown>; env?: Record<string, string> } = {},
): Promise<PoolGateway> {
  Object.assign(process.env, TARGET_SECRETS);
  const base = testConfigObject('http://127.0.0.1:1', options.overrides);
  const section = { targets: targets.map((target) => ({ apiKeyEnv: 'POOL_KEY_A', ...target })), timeoutMs: 5000, retryBaseDelayMs: 5, ...upstream };
  const config = parseConfig({ ...base, upstream: section }, { PORT: '0', ...options.env });
  const { logger, lines } = createCapturingLogger();
  const running = await startGateway({ config, logger, store, host: '127.0.0.1', requestScope: false });
  return {
    running,
    url: running.url,
    logLines: lines,
    async ledger(keyId = 'team-all') {
      await waitForAfterResponseSteps(running.gateway.router);
      const rows = await running.store.getUsage(keyId, utcMonth(Date.now()));
      return rows.reduce((sum, row) => ({
        requests: sum.requests + row.requests, inputTokens: sum.inputTokens + row.inputTokens, outputTokens: sum.outputTokens + row.outputTokens,
      }), { requests: 0, inputTokens: 0, outputTokens: 0 });
    },
    close: () => running.close(),
  };
}

/** Run `count` calls of `task`, at most `concurrency` at once; their results in order. */
export async function runConcurrently<T>(count: number, concurrency: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
    }
  }));
  return results;
}
