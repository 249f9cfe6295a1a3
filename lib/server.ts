/**
 * Entry point (`npm start`, the Procfile's web process): load the config, open the store, start the
 * simulated upstream when none is configured, listen on PORT, re-read the config on SIGHUP, shut down
 * gracefully on SIGTERM. With `WEB_CONCURRENCY=N` (N > 1) it runs N worker processes (node cluster)
 * sharing the port, so one instance uses every core; the primary only supervises them.
 */
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitForAfterResponseSteps } from './app';
import { ConfigError, loadConfig, type GatewayConfig } from './config';
import { buildGateway, type Gateway } from './gateway';
import type { TracingEnv } from './observability/tracing';
import { createHttpServer } from './http/http-server';
import { InFlight } from './http/in-flight';
import { createLogger, type Logger } from './observability/logger';
import type { Clock } from './store/month';
import type { GatewayStore } from './store/types';

export interface RunningGateway {
  server: http.Server;
  /** `http://127.0.0.1:<port>` */
  url: string;
  store: GatewayStore;
  /** The built gateway (config in force, reload, metrics). */
  gateway: Gateway;
  /** The development key created when no key is configured (shown once at start), else undefined. */
  developmentKey?: string;
  /**
   * Graceful stop: stop accepting connections, let requests and streams in flight finish for up to
   * `graceMs` (default `shutdownGraceMs`), then cut what is left; wait for every finish step (credit
   * settlement, log line) and close the store (which flushes it).
   */
  close(graceMs?: number): Promise<void>;
  /**
   * The first half of a rolling restart: `/health` answers 503 `draining` and every reply closes its
   * connection (a client's next request opens a new one, which the load balancer sends elsewhere),
   * while the listener keeps accepting for `delayMs` (default `shutdownDelayMs`); resolves then.
   */
  drain(delayMs?: number): Promise<void>;
}

export interface StartOptions {
  config: GatewayConfig;
  logger?: Logger;
  store?: GatewayStore;
  /** Listen host. Default: all interfaces. */
  host?: string;
  /** Reads and validates the config again for `gateway.reload()` (SIGHUP). Default: reload is refused. */
  loadConfig?: () => GatewayConfig;
  /**
   * With the in-memory store: the file its state is read from at start and written to on close
   * (graceful shutdown). Default: none (nothing persisted). `npm start` passes `config.stateFile`.
   */
  stateFile?: string;
  /** Clock for key expiry and the credit cap's UTC month, epoch ms. Default: the real clock. */
  clock?: Clock;
  /**
   * Whether the caller's own code may write lines through the logger while requests run (see
   * `BuildOptions.requestScope`). Default: true when `logger` is given, else false.
   */
  requestScope?: boolean;
  /** The environment whose OpenTelemetry variables turn tracing on (see `BuildOptions.tracingEnv`). Default: `process.env`. */
  tracingEnv?: TracingEnv;
}

/** Start a gateway for a validated config. */
export async function startGateway(options: StartOptions): Promise<RunningGateway> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.logLevel);
  const gateway = await buildGateway({
    config, logger, store: options.store, loadConfig: options.loadConfig, developmentKey: true, stateFile: options.stateFile, clock: options.clock,
    tracingEnv: options.tracingEnv,
    // The server runs no code of its caller's on a request's path; a caller that passed its own
    // logger may still write lines with it while requests run.
    requestScope: options.requestScope ?? options.logger !== undefined,
  });
  const server = createHttpServer(gateway.app);
  server.keepAliveTimeout = 65_000;
  /** Responses not yet closed; a graceful shutdown waits for them (and their finish steps). */
  const inFlight = new InFlight();
  server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight.begin();
    res.once('close', inFlight.end);
  });
  await new Promise<void>((resolve) => server.listen(config.port, options.host, resolve));
  const { port } = server.address() as AddressInfo;
  logger.info({ message: 'gateway listening', port, store: gateway.store.kind, models: config.models.length });

  let closingConnections = false;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    store: gateway.store,
    gateway,
    developmentKey: gateway.developmentKey,
    close: (graceMs = gateway.config.shutdownGraceMs) => shutdown(graceMs),
    drain: (delayMs = gateway.config.shutdownDelayMs) => drain(delayMs),
  };

  /** From now on every reply closes its connection (a client's next request opens a new one); installed once. */
  function closeEachConnectionAfterItsReply(): void {
    if (closingConnections) return;
    closingConnections = true;
    server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => res.setHeader('connection', 'close'));
  }

  async function drain(delayMs: number): Promise<void> {
    gateway.startDraining();
    closeEachConnectionAfterItsReply();
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }

  async function shutdown(graceMs: number): Promise<void> {
    const allClosed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Replies still to come close their connection, and idle kept-alive connections are let go as
    // soon as they fall idle, so nothing new can start on them.
    closeEachConnectionAfterItsReply();
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    let graceTimer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace over'>((resolve) => (graceTimer = setTimeout(() => resolve('grace over'), graceMs)));
    const outcome = await Promise.race([allClosed.then(() => 'drained' as const), graceOver]);
    clearInterval(sweep);
    clearTimeout(graceTimer);
    if (outcome === 'grace over') {
      logger.warn({ message: 'shutdown grace period over: cutting the requests still in flight', grace_ms: graceMs });
      server.closeAllConnections();
      await allClosed;
    }
    // A cut socket closes its response a tick later; then each closed response settles in its finish
    // steps, and the store must stay open until they are done.
    await inFlight.idle();
    await waitForAfterResponseSteps(gateway.router);
    await gateway.close();
  }
}

/**
 * The gateway as `npm start` runs it in its process (or in each cluster worker): `startGateway` with
 * the memory store's state file from the config, and requests outside the logger's request scope,
 * since the server's own lines (start, reload, shutdown) are written outside any request (a fail-open
 * store still gets the scope: see `needsRequestScope` in lib/gateway.ts). The benchmark starts its
 * gateway through this too, so it measures what a deployment runs.
 * @throws as `startGateway` (the store or the port cannot be opened)
 */
export function startServerGateway(
  config: GatewayConfig,
  options: Pick<StartOptions, 'logger' | 'loadConfig' | 'host'> = {},
): Promise<RunningGateway> {
  return startGateway({ config, ...options, stateFile: config.stateFile, requestScope: false });
}

/**
 * Worker processes asked for by `WEB_CONCURRENCY`: unset or empty means 1 (no cluster).
 * @throws ConfigError when the value is not a whole number from 1 to 256
 */
export function parseWebConcurrency(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return 1;
  const workers = Number(value);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) {
    throw new ConfigError(`invalid configuration: WEB_CONCURRENCY: "${value}" must be a whole number of worker processes from 1 to 256`);
  }
  return workers;
}

/**
 * What a cluster needs, checked before any worker starts.
 * @throws ConfigError without the Redis store (each worker would count rate limits and credits in its
 *   own memory, so a cap could be passed N times over) or without configured keys (each worker would
 *   issue its own development key)
 */
export function checkClusterConfig(config: GatewayConfig): void {
  if (!config.redisUrl && !config.redisClusterNodes) {
    throw new ConfigError('invalid configuration: WEB_CONCURRENCY > 1 needs the Redis store (set REDIS_URL or REDIS_CLUSTER_NODES), so every worker shares the same limits and credits');
  }
  if (config.keys.length === 0) {
    throw new ConfigError('invalid configuration: WEB_CONCURRENCY > 1 needs keys in the configuration (each worker would otherwise issue its own development key)');
  }
}

/**
 * The cluster primary: fork `workers` gateway processes and replace one that dies unexpectedly (at
 * most once a second, so a worker that cannot start does not spin); SIGHUP is passed on to every
 * worker; on SIGTERM/SIGINT each is asked to shut down gracefully, and the primary exits when all have.
 */
/** Exit once every line logged so far has reached the logger's transports (winston passes them on asynchronously). */
function exitAfterLogs(logger: Logger, code: number): void {
  logger.once('finish', () => process.exit(code));
  logger.end();
}

function runPrimary(workers: number, logger: Logger): void {
  let stopping = false;
  let lastFork = 0;
  const forkWorker = () => {
    lastFork = Date.now();
    cluster.fork();
  };
  const running = () => Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
  for (let i = 0; i < workers; i++) forkWorker();
  logger.info({ message: 'cluster primary started', workers, pid: process.pid });
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (running().length === 0) exitAfterLogs(logger, 0);
      return;
    }
    logger.error({ message: 'worker exited; starting a new one', worker_pid: worker.process.pid, code, signal });
    setTimeout(forkWorker, Math.max(0, lastFork + 1000 - Date.now()));
  });
  process.on('SIGHUP', () => {
    for (const worker of running()) worker.process.kill('SIGHUP');
  });
  const shutdown = (signal: NodeJS.Signals) => {
    stopping = true;
    logger.info({ message: 'shutting down workers', signal });
    for (const worker of running()) worker.process.kill('SIGTERM');
    if (running().length === 0) exitAfterLogs(logger, 0);
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

/**
 * Run the gateway as a process (`npm start`, the Procfile, `npx model-gateway`): config from GATEWAY_CONFIG or the
 * package's config.json, signals handled (SIGHUP reload, SIGTERM/SIGINT drain).
 * @throws Error (rejects) when the config is invalid or the store cannot be opened
 */
export async function runServer(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const workers = parseWebConcurrency(process.env.WEB_CONCURRENCY);
  if (workers > 1 && cluster.isPrimary) {
    checkClusterConfig(config);
    return runPrimary(workers, logger);
  }
  const gateway = await startServerGateway(config, { logger, loadConfig: () => loadConfig() });
  if (gateway.developmentKey) {
    // Shown once, on the terminal, so a fresh clone can be tried with curl; never written to the JSON log.
    process.stderr.write(
      `\nNo key is configured: here is a development key (allowed every model, no cap; retired once a real key exists):\n\n` +
        `    ${gateway.developmentKey}\n\n` +
        `Try:  curl ${gateway.url}/v1/models -H "x-api-key: ${gateway.developmentKey}"\n\n`,
    );
  }
  /**
   * SIGTERM drains first (the load balancer's health check sees `draining` while connections are still
   * accepted), then stops accepting; `shutdownGraceMs` counts from the signal, so the whole stop stays
   * inside a host's window (Heroku: 30 s from SIGTERM to SIGKILL). SIGINT (a terminal's Ctrl-C) stops at once.
   */
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const { shutdownGraceMs, shutdownDelayMs } = gateway.gateway.config;
    const delayMs = signal === 'SIGTERM' ? Math.min(shutdownDelayMs, shutdownGraceMs) : 0;
    if (delayMs > 0) {
      logger.info({ message: 'draining: /health answers 503 draining; new requests are still served', signal, delay_ms: delayMs });
      await gateway.drain(delayMs);
    }
    logger.info({ message: 'shutting down: no new connections; requests in flight may finish', signal, grace_ms: shutdownGraceMs - delayMs });
    gateway.close(shutdownGraceMs - delayMs).then(
      () => {
        logger.info({ message: 'shutdown complete' });
        exitAfterLogs(logger, 0);
      },
      (err) => {
        logger.error({ message: 'shutdown failed', error: (err as Error).message });
        exitAfterLogs(logger, 1);
      },
    );
  };
  // The catalogue changes over time (spec, Versioning 4): SIGHUP re-reads and re-validates the config
  // file; open connections and streams carry on, and an invalid file is refused (logged) and ignored.
  process.on('SIGHUP', () => {
    logger.info({ message: 'SIGHUP: re-reading the configuration' });
    void gateway.gateway.reload();
  });
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

if (require.main === module) runServerOrExit();

/** {@link runServer}, with a failure to start written to stderr and exit status 1. */
export function runServerOrExit(): void {
  runServer().catch((err) => {
    process.stderr.write(`model-gateway failed to start: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
