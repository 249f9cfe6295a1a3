/**
 * The library entry: `createGateway(options)` builds a complete gateway (config, store, upstream
 * clients, metrics, the Express app and its mountable router) without listening; `buildGateway` does
 * the same from an already validated config (the server uses it).
 */
import express, { type Express, type Router } from 'express';
import { createGatewayRouter } from './app';
import { ConfigError, defaultConfigFile, parseConfig, readConfigFile, type ConfigEnv, type GatewayConfig } from './config';
import { createConfigSource, describeConfigChange } from './config/config-source';
import type { AfterResponseStep } from './pipeline/after-response';
import { mergeHooks, type GatewayHooks } from './pipeline/hooks';
import { DEVELOPMENT_KEY_RETIRED, issueDevelopmentKey, retireDevelopmentKey } from './keys/development-key';
import { createAlertDispatcher, type AlertDispatcher } from './alerts/alert-dispatcher';
import { createLogger, withRequestIds, type Logger } from './observability/logger';
import { createMetrics, type GatewayMetrics } from './observability/metrics';
import { startSimulatedUpstream, type SimulatedUpstream } from './upstream/simulated-upstream';
import { createStore, MemoryStore, seedConfigKeys } from './store';
import { openKeyChannel } from './keys/key-control';
import { logDeclaredKeyChanges } from './store/declared-keys';
import { recordConfigReload } from './audit/config-audit';
import { createStoreGuard } from './store/guard';
import { keepMemoryState, loadMemoryState, saveMemoryState } from './store/memory-persistence';
import { systemClock, type Clock } from './store/month';
import type { GatewayStore } from './store/types';
import { createTracing, tracesEndpointOf, type TracingEnv } from './observability/tracing';
import { createUpstreamClient, createUpstreamPool, faultOptionsOf, targetOptionsOf, type UpstreamPool } from './upstream';
import { openTeamDirectory } from './people/team-directory';
import { checkUpstreamCredentials, isPlainObject, mergeConfigObjects } from './config/merge';

export { checkUpstreamCredentials, mergeConfigObjects } from './config/merge';

/** Options of `createGateway`. Every field is optional. */
export interface GatewayOptions {
  /**
   * config.json fields that override the file, with the same validation: a top-level field replaces the
   * file's (`models`, `keys`, `keyGroups` are replaced whole), except the objects `upstream`, `defaults`
   * and `limits`, whose fields are merged. Default: none.
   */
  config?: Record<string, unknown>;
  /**
   * The config file under the overrides. Default: env `GATEWAY_CONFIG`, else the shipped config.json.
   * `false`: no file; `config` must then be a complete configuration.
   */
  configFile?: string | false;
  /** Environment read by the config (PORT, UPSTREAM_URL, REDIS_URL, METRICS_TOKEN, ...) and tracing (OTEL_*). Default: `process.env`. */
  env?: ConfigEnv;
  /** The store. Default: the one the config asks for (memory, or Redis with REDIS_URL). */
  store?: GatewayStore;
  /** The logger. Default: JSON lines on stdout at the config's log level. */
  logger?: Logger;
  /** Integrator hooks (`afterAuth`, `beforeUpstream`, `onResponse`); see lib/pipeline/hooks.ts and README "Extending". */
  hooks?: GatewayHooks | GatewayHooks[];
  /** Create a development key when no key exists (shown once by the server). Default false. */
  developmentKey?: boolean;
}

/** Outcome of a reload: applied, or refused with the reason (the old configuration stays). */
export type ReloadResult = { ok: true; reloaded: string[]; needsRestart: string[] } | { ok: false; error: string };

/** A built gateway. */
export interface Gateway {
  /** The Express app (the router mounted at `/`): `createHttpServer(gateway.app).listen(port)` (lib/http/http-server.ts) or `gateway.app.listen(port)`. */
  readonly app: Express;
  /** The same routes as a Router, to mount under a path of another app: `parent.use('/llm', gateway.router)`. */
  readonly router: Router;
  /** The configuration in force (replaced whole by `reload`). */
  readonly config: GatewayConfig;
  readonly store: GatewayStore;
  readonly logger: Logger;
  /** The Prometheus registry behind `GET /metrics`. */
  readonly metrics: GatewayMetrics;
  /** The upstream clients of the key groups. */
  readonly upstreams: UpstreamPool;
  /** True when replies come from the embedded simulated upstream (no upstream URL configured). */
  readonly simulated: boolean;
  /** The development key created for this run, when asked for and no key existed. */
  readonly developmentKey?: string;
  /**
   * Re-read and re-validate the configuration (models, aliases, pricing, key groups, config keys).
   * Open connections and streams are untouched; an invalid configuration is refused, logged, and the
   * current one stays. Never throws.
   */
  reload(): Promise<ReloadResult>;
  /**
   * Start draining before a shutdown: from now on `/health` answers 503 `status: "draining"`, so a load
   * balancer stops sending requests here; requests are still served. Cannot be undone.
   */
  startDraining(): void;
  /** Stop the simulated upstream, the upstream agents and the store (the caller closes its server). */
  close(): Promise<void>;
}

/** Options of `buildGateway`: a validated config and how to read it again on reload. */
export interface BuildOptions {
  config: GatewayConfig;
  /** Reads and validates the configuration again (throws ConfigError). Default: reload is refused. */
  loadConfig?: () => GatewayConfig;
  store?: GatewayStore;
  logger?: Logger;
  hooks?: GatewayHooks | GatewayHooks[];
  /** Extra finish steps, run after credit settlement and before the built-in metrics and log. */
  afterResponseSteps?: AfterResponseStep[];
  developmentKey?: boolean;
  /** With the in-memory store: its state file, read now and written by `close()`. Default: none. */
  stateFile?: string;
  /** Clock for key expiry and the credit cap's UTC month, epoch ms. Default: the real clock. */
  clock?: Clock;
  /**
   * Whether code outside the gateway's pipeline (the caller's own middleware around `gateway.app` or
   * `gateway.router`) may write lines through `gateway.logger` while a request is handled, which must
   * then carry its `request_id`. Default true. The standalone server, which runs no such code, passes
   * false. Hooks and a fail-open store put the scope back regardless: see `needsRequestScope`.
   */
  requestScope?: boolean;
  /** The environment whose OpenTelemetry variables turn tracing on (`OTEL_EXPORTER_OTLP_ENDPOINT`, ...; lib/observability/tracing.ts). Default: `process.env`. */
  tracingEnv?: TracingEnv;
}

/**
 * Whether requests must run in the logger's request scope (an AsyncLocalStorage, lib/observability/logger.ts), for
 * lines that code other than the gateway's own steps writes during a request to carry its `request_id`:
 * the caller's middleware (`callerCode`), integrator or finish hooks, and the store guard's warnings
 * when it serves requests unmetered through an outage (`failOpenStore`). The gateway's own lines name
 * their request themselves and need no scope: the request line, errors and warnings, and a failing
 * store's `store unreachable` and `settlement delayed` lines (lib/store/guard.ts).
 *
 * Not always on: on Node 20 an AsyncLocalStorage in use runs an async hook for every promise created
 * anywhere in the process (8 to 17 % more CPU per request).
 */
export function needsRequestScope(parts: { callerCode: boolean; hooks: number; failOpenStore: boolean }): boolean {
  return parts.callerCode || parts.hooks > 0 || parts.failOpenStore;
}

/**
 * Build a gateway from options (the library API).
 * @throws ConfigError when the merged configuration is invalid (the message names the field)
 * @throws TypeError when a hook is not a function
 */
export async function createGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const env = options.env ?? process.env;
  const load = () => {
    const file = options.configFile === false ? {} : readConfigFile(options.configFile ?? defaultConfigFile(env));
    if (!isPlainObject(file)) throw new ConfigError('invalid configuration: the top level of the config file must be an object');
    return parseConfig(mergeConfigObjects(file, options.config), env);
  };
  return buildGateway({
    config: load(), loadConfig: load, store: options.store, logger: options.logger, hooks: options.hooks, developmentKey: options.developmentKey,
    tracingEnv: env,
  });
}

/** Build a gateway from a validated config. */
export async function buildGateway(options: BuildOptions): Promise<Gateway> {
  const { config } = options;
  // Before anything starts: a target whose credential is missing stops the start.
  checkUpstreamCredentials(config, process.env);
  const logger = withRequestIds(options.logger ?? createLogger(config.logLevel));
  const backing = options.store ?? (await createStore(config, {
    clock: options.clock,
    onError: (err) => logger.error({ message: 'store connection error', error: err.message }),
  }));
  // Outage behaviour (fail closed or open, delayed settlements) wraps every store that can become
  // unreachable: Redis and integrators' own stores. The in-process memory store cannot, and its calls
  // are on every request's path, so it goes unwrapped (the guard's timer and proxy per call cost CPU).
  const store = backing instanceof MemoryStore
    ? backing
    : createStoreGuard(backing, { logger, failOpen: config.store.failOpen, timeoutMs: config.store.timeoutMs });
  store.setRequestLogRetention(config.requestLog.retentionDays * 24 * 60 * 60 * 1000, config.requestLog.maxMemoryRecords);
  const stateFile = backing instanceof MemoryStore ? options.stateFile : undefined;
  if (stateFile && loadMemoryState(backing as MemoryStore, stateFile)) {
    logger.info({ message: 'in-memory store state restored', file: stateFile });
  }
  logDeclaredKeyChanges(logger, await seedConfigKeys(store, config));
  const stopKeepingState = stateFile
    ? keepMemoryState(backing as MemoryStore, stateFile, (err) => logger.error({ message: 'in-memory store state not saved', file: stateFile, error: err.message }))
    : undefined;

  let developmentKey: string | undefined;
  if (options.developmentKey && config.keys.length === 0) {
    const outcome = await issueDevelopmentKey(store, !(backing instanceof MemoryStore), config.defaults.rateLimitPerMinute);
    if (outcome.kind === 'issued') developmentKey = outcome.secret;
    if (outcome.kind === 'kept') logger.warn({ message: `no development key printed: ${outcome.why}` });
  }
  if (await retireDevelopmentKey(store)) logger.warn({ message: DEVELOPMENT_KEY_RETIRED });

  let simulated: SimulatedUpstream | undefined;
  if (config.upstream.targets.length === 0) {
    // It knows the catalogue's upstream model names, as they stand after a reload.
    simulated = await startSimulatedUpstream({ models: () => source.config.models.map((model) => model.upstreamModel) });
    logger.warn({ message: 'no upstream configured (upstream.url / UPSTREAM_URL): replies are SIMULATED by the embedded upstream' });
  }
  const faults = faultOptionsOf(config.upstream);
  const upstream = createUpstreamClient({
    targets: simulated
      ? [{ url: simulated.url }]
      : config.upstream.targets.map((target) => targetOptionsOf(target, process.env)),
    timeoutMs: config.upstream.timeoutMs,
    ...faults,
  });
  const upstreams = createUpstreamPool({ defaultClient: upstream, defaultTargets: config.upstream.targets, faults });
  // Every key group's client at start: a cloud target whose provider cannot be made stops the start, never a request.
  upstreams.inUse(config.keyGroups);
  const source = createConfigSource(config);
  const teamDirectory = await openTeamDirectory(store, () => source.config.teams, (err) => logger.error({ message: 'teams made through the admin API not read; the last ones read stay', error: (err as { log?: { error?: string } }).log?.error ?? err.message }), options.clock);
  const keyChannel = stateFile ? await openKeyChannel(stateFile, store, () => source.config, logger) : undefined;
  const metrics = createMetrics();
  const hooks = mergeHooks(options.hooks);
  const requestScope = needsRequestScope({
    callerCode: options.requestScope ?? true,
    hooks: hooks.afterAuth.length + hooks.beforeUpstream.length + hooks.onResponse.length + (options.afterResponseSteps?.length ?? 0),
    failOpenStore: store !== backing && config.store.failOpen,
  });
  // Budget alerts, when a webhook is configured (config validation makes sure its secret is set).
  const alerts: AlertDispatcher | undefined = config.alerts.webhookUrl && config.alertsWebhookSecret
    ? createAlertDispatcher({
      store, logger, url: config.alerts.webhookUrl, secret: config.alertsWebhookSecret, clock: options.clock ?? systemClock,
      timeoutMs: config.alerts.timeoutMs, retryBaseDelayMs: config.alerts.retryBaseDelayMs, retryForMs: config.alerts.retryForMs,
      pollIntervalMs: config.alerts.pollIntervalMs,
    })
    : undefined;
  const tracing = createTracing(options.tracingEnv ?? process.env);
  if (tracing) logger.info({ message: 'OpenTelemetry traces on: exported over OTLP/HTTP', endpoint: tracesEndpointOf(options.tracingEnv ?? process.env) });
  let draining = false;
  const router = createGatewayRouter({
    draining: () => draining,
    config, configSource: source, store, upstream, upstreams, logger, simulated: simulated !== undefined, teamDirectory,
    afterResponseSteps: options.afterResponseSteps, hooks, metrics, clock: options.clock, requestScope, alerts, tracing,
  });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(router);

  async function reload(): Promise<ReloadResult> {
    let next: GatewayConfig;
    try {
      if (!options.loadConfig) throw new ConfigError('this gateway was built from a config object and has no file to re-read');
      next = options.loadConfig();
      checkUpstreamCredentials(next, process.env);
      // The embedded simulated upstream is started (or not) once: no client could serve an upstream gone.
      if (next.upstream.targets.length === 0 && !simulated) {
        throw new ConfigError('invalid configuration: upstream: a reload cannot remove the upstream (the embedded simulated one starts only at start-up); restart to run without one');
      }
      // Each group's client made now: a cloud target whose provider cannot be made refuses the reload.
      upstreams.inUse(next.keyGroups);
    } catch (err) {
      const error = (err as Error).message;
      logger.error({ message: 'configuration reload refused; the current configuration stays', reason: error });
      return { ok: false, error };
    }
    const previous = source.config;
    const change = describeConfigChange(previous, next);
    source.replace(next);
    upstreams.retireUnused(next.keyGroups);
    try {
      logDeclaredKeyChanges(logger, await seedConfigKeys(store, next));
    } catch (err) {
      logger.error({ message: 'configuration reloaded, but seeding its keys failed', reason: (err as Error).message });
    }
    await recordConfigReload(store, previous, next, change, logger);
    logger.info({ message: 'configuration reloaded', reloaded: change.reloaded, models: next.models.length, key_groups: next.keyGroups.map((g) => g.id) });
    if (change.needsRestart.length > 0) {
      logger.warn({ message: 'configuration fields changed that take effect only after a restart', fields: change.needsRestart });
    }
    return { ok: true, ...change };
  }

  return {
    app, router, store, logger, metrics, upstreams, developmentKey,
    simulated: simulated !== undefined,
    get config() {
      return source.config;
    },
    reload,
    startDraining() {
      draining = true;
    },
    async close() {
      await simulated?.close();
      upstreams.destroy();
      for (const target of upstream.targets) target.agent.destroy();
      // Before the store: an alert being sent is put back in it for another instance.
      await alerts?.close();
      teamDirectory.stop();
      await store.close();
      // After the finish steps (the caller waited for them): their spans are exported before it resolves.
      await tracing?.shutdown().catch((err: Error) => logger.warn({ message: 'traces not exported at shutdown', error: err.message }));
      // Before the last write: a key command can no longer change the store behind it.
      await keyChannel?.close();
      stopKeepingState?.();
      if (stateFile) {
        // After store.close(): the settlements of the last requests are in the state written.
        saveMemoryState(backing as MemoryStore, stateFile);
        logger.info({ message: 'in-memory store state saved', file: stateFile });
      }
    },
  };
}
