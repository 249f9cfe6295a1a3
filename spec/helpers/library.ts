/** Test harness for the library API: a createGateway app on an ephemeral loopback port. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGateway, type Gateway, type GatewayOptions } from '../../lib';
import { createCapturingLogger, KEYS, UPSTREAM_SECRET } from './gateway';

export interface LibraryGateway {
  gateway: Gateway;
  url: string;
  logLines: Array<Record<string, any>>;
  close(): Promise<void>;
}

/** The test keys of spec/helpers/gateway.ts. */
export const TEST_KEYS = [
  { id: 'team-all', key: KEYS.all, rateLimitPerMinute: 100000 },
  { id: 'team-haiku', key: KEYS.haikuOnly, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100000 },
];

/** createGateway against `upstreamUrl` with the test keys, listening on 127.0.0.1. */
export async function startLibraryGateway(upstreamUrl: string, options: GatewayOptions = {}): Promise<LibraryGateway> {
  process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
  const { logger, lines } = createCapturingLogger();
  const gateway = await createGateway({
    logger,
    // Not the process environment: a REDIS_URL exported for CI must not put these gateways on the shared
    // Redis under the default prefix. A test that wants the environment passes it.
    env: {},
    ...options,
    config: { upstream: { url: upstreamUrl, apiKeyEnv: 'TEST_UPSTREAM_API_KEY', timeoutMs: 5000 }, keys: TEST_KEYS, ...options.config },
  });
  const server = http.createServer(gateway.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    gateway,
    url: `http://127.0.0.1:${port}`,
    logLines: lines,
    async close() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await gateway.close();
    },
  };
}

/** Resolves once `check()` is true (polling every 10 ms, up to `limitMs`), else rejects. */
export async function eventually(check: () => boolean, limitMs = 3000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
