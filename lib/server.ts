/**
 * Entry point (`npm start`, the Procfile's web process): load the config, open the store, start the
 * simulated upstream when none is configured, listen on PORT, shut down gracefully on SIGTERM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { loadConfig, type GatewayConfig } from './config';
import { generateSecret, hashSecret, lastFour } from './keys';
import { createLogger, type Logger } from './logger';
import { startSimulatedUpstream, type SimulatedUpstream } from './simulated-upstream';
import { createStore, seedConfigKeys } from './store';
import type { GatewayStore } from './store/types';
import { createUpstreamClient } from './upstream';

export interface RunningGateway {
  server: http.Server;
  /** `http://127.0.0.1:<port>` */
  url: string;
  store: GatewayStore;
  /** The development key created when no key is configured (shown once at start), else undefined. */
  developmentKey?: string;
  close(): Promise<void>;
}

export interface StartOptions {
  config: GatewayConfig;
  logger?: Logger;
  store?: GatewayStore;
  /** Listen host. Default: all interfaces. */
  host?: string;
}

/** Start a gateway for a validated config. */
export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = options.store ?? (await createStore(config));
  await seedConfigKeys(store, config);

  let developmentKey: string | undefined;
  if (config.keys.length === 0 && (await store.listKeys()).length === 0) {
    developmentKey = generateSecret();
    await store.createKey({
      id: 'development', name: 'development key', secret: { sha256: hashSecret(developmentKey), expiresAt: null },
      last4: lastFour(developmentKey), rateLimitPerMinute: config.defaults.rateLimitPerMinute, allowedModels: null, monthlyCreditCap: null,
    });
  }

  let simulated: SimulatedUpstream | undefined;
  let upstreamUrl = config.upstream.url;
  if (!upstreamUrl) {
    simulated = await startSimulatedUpstream();
    upstreamUrl = simulated.url;
    logger.warn({ message: 'no upstream configured (upstream.url / UPSTREAM_URL): replies are SIMULATED by the embedded upstream' });
  }
  const upstream = createUpstreamClient({
    url: upstreamUrl,
    apiKey: process.env[config.upstream.apiKeyEnv],
    timeoutMs: config.upstream.timeoutMs,
  });
  const app = createApp({ config, store, upstream, logger, simulated: simulated !== undefined });
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, options.host, resolve));
  const { port } = server.address() as AddressInfo;
  logger.info({ message: 'gateway listening', port, store: store.kind, models: config.models.length });

  return {
    server,
    url: `http://127.0.0.1:${port}`,
    store,
    developmentKey,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await simulated?.close();
      upstream.agent.destroy();
      await store.close();
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const gateway = await startGateway({ config, logger });
  if (gateway.developmentKey) {
    // Shown once, on the terminal, so a fresh clone can be tried with curl; never written to the JSON log.
    process.stderr.write(
      `\nNo key is configured: created a development key for this run (allowed every model, no cap):\n\n` +
        `    ${gateway.developmentKey}\n\n` +
        `Try:  curl ${gateway.url}/v1/models -H "x-api-key: ${gateway.developmentKey}"\n\n`,
    );
  }
  const shutdown = (signal: string) => {
    logger.info({ message: 'shutting down', signal });
    gateway.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`model-gateway failed to start: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
