/**
 * Test harness: a gateway on an ephemeral loopback port against a fake upstream, with a few keys.
 */
import winston from 'winston';
import { Writable } from 'node:stream';
import { parseConfig, type GatewayConfig } from '../../lib/config';
import type { Logger } from '../../lib/observability/logger';
import { startGateway, type RunningGateway } from '../../lib/server';
import type { Clock } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { startFakeUpstream, type FakeHandler, type FakeUpstream } from './fake-upstream';

/** Keys every test gateway has. */
export const KEYS = {
  all: 'sk-cs4-test-all-models-0001',
  haikuOnly: 'sk-cs4-test-haiku-only-0002',
  revoked: 'sk-cs4-test-revoked-key-0003',
};

export const UPSTREAM_SECRET = 'upstream-secret-never-shown';

/** The shipped catalogue, with the test keys. */
export function testConfigObject(
  upstreamUrl: string,
  overrides: Record<string, unknown> = {},
  upstream: Record<string, unknown> = {},
): Record<string, unknown> {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const shipped = require('../../../config.json');
  return {
    ...shipped,
    // No draining before a test process's SIGTERM ends (spec/integration/rolling-restart sets its own).
    shutdownDelayMs: 0,
    upstream: { url: upstreamUrl, apiKeyEnv: 'TEST_UPSTREAM_API_KEY', timeoutMs: 5000, ...upstream },
    keys: [
      { id: 'team-all', key: KEYS.all, rateLimitPerMinute: 100000 },
      { id: 'team-haiku', key: KEYS.haikuOnly, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100000 },
      { id: 'team-revoked', key: KEYS.revoked, revoked: true },
    ],
    ...overrides,
  };
}

/** A logger that keeps every line in memory (for log assertions) and prints nothing. */
export function createCapturingLogger(): { logger: Logger; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = winston.createLogger({
    level: 'debug',
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Stream({ stream: sink })],
  });
  return { logger, lines };
}

export interface TestGateway {
  gateway: RunningGateway;
  upstream: FakeUpstream;
  config: GatewayConfig;
  url: string;
  logLines: Array<Record<string, any>>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  handler?: FakeHandler;
  /** Judge message requests by the real API's rules (api-rules.ts) before the handler answers. Default true. */
  apiRules?: boolean;
  overrides?: Record<string, unknown>;
  /** Fields merged into the `upstream` section (its `url` is the fake upstream's unless given). */
  upstream?: Record<string, unknown>;
  store?: GatewayStore;
  env?: Record<string, string>;
  /** upstream.timeoutMs of the test config. Default 5000. */
  upstreamTimeoutMs?: number;
  /** Clock for key expiry and the credit cap's month. */
  clock?: Clock;
  /** OpenTelemetry variables (lib/observability/tracing.ts). Default: none, tracing off whatever the test runner's environment says. */
  tracingEnv?: Record<string, string>;
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const upstream = await startFakeUpstream(options.handler, { apiRules: options.apiRules });
  process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
  const upstreamSection = { ...(options.upstreamTimeoutMs ? { timeoutMs: options.upstreamTimeoutMs } : {}), ...options.upstream };
  const config = parseConfig(testConfigObject(upstream.url, options.overrides, upstreamSection), { PORT: '0', ...options.env });
  const { logger, lines } = createCapturingLogger();
  // No request scope, as `npm start` runs: every line about a request must name it by itself.
  const gateway = await startGateway({ config, logger, store: options.store, host: '127.0.0.1', clock: options.clock, requestScope: false, tracingEnv: options.tracingEnv ?? {} });
  return {
    gateway,
    upstream,
    config,
    url: gateway.url,
    logLines: lines,
    async close() {
      await gateway.close();
      await upstream.close();
    },
  };
}
