/**
 * The gateway's Express router: the whole request path, written once, in order.
 *
 *   request context -> host check -> auth -> JSON body -> [afterAuth hooks] -> version header (native)
 *   -> validation -> alias resolution -> key group check -> model whitelist -> [stored conversation (Responses)]
 *   -> [kept tool-loop thinking (chat, Responses)] -> rate limit -> credit reservation
 *   -> [beforeUpstream hooks] -> by key group: native proxy | chat translator | chat pass-through
 *      | reverse translation | Responses translator
 *   ... response closes -> finish (settle credits, metrics, [onResponse hooks], log)
 *
 * The rate limit counts only authenticated requests for a model the key may use; the credit
 * reservation comes last among the checks so nothing is held for a request a cheaper check refuses.
 *
 * Beside the public API: the admin API (`/admin/v1`) and dashboard (`/dashboard`), when ADMIN_TOKEN or
 * sign-in (`auth.oidc`, lib/people/) is set.
 */
import { Router, type RequestHandler } from 'express';
import { createLiveCatalogue, type Catalogue } from './config/catalogue';
import { createAdminSurface } from './admin/admin-surface';
import type { AlertDispatcher } from './alerts/alert-dispatcher';
import { createBudgetAlerts } from './alerts/budget-alerts';
import { registerSpendGauge, SPEND_GAUGE_NAME } from './alerts/spend-gauge';
import type { GatewayConfig } from './config';
import { createConfigSource, type ConfigSource } from './config/config-source';
import { createAfterResponse, type AfterResponseStep } from './pipeline/after-response';
import { createHookContext, createHookStep, createUsageRecord, mergeHooks, type GatewayHooks } from './pipeline/hooks';
import type { RequestContext } from './pipeline/context';
import { DEFAULT_KEY_GROUP, type KeyGroupConfig } from './config/key-groups';
import { errors } from './http/errors';
import { withRequestIds, type Logger } from './observability/logger';
import { createMetrics, createMetricsEndpoint, type GatewayMetrics } from './observability/metrics';
import { createSettlement } from './billing/settlement';
import { systemClock, type Clock } from './store/month';
import type { GatewayStore } from './store/types';
import { createTeamDirectory, teamStoreOf, type TeamDirectory } from './people/team-directory';
import type { Tracing } from './observability/tracing';
import { PUBLIC_ROUTES } from './pipeline/route-table';
import { createUpstreamPool, type UpstreamClient, type UpstreamPool } from './upstream';
import { createAuth, type AuthHeaders } from '../middleware/auth';
import { createChatCompletions } from '../routes/chat-completions';
import { createChatPassthrough } from '../routes/chat-passthrough';
import { createErrorHandler } from '../middleware/error-handler';
import { createHealth, createLiveness } from '../routes/health';
import { createHostCheck } from '../middleware/host-check';
import { createJsonBody } from '../middleware/json-body';
import { createKeyGroupDispatch, createRouteRefusal, createUpstreamMark } from '../middleware/key-group-dispatch';
import { createListModels, createRetrieveModel } from '../routes/list-models';
import { createKeyGroupCheck, createModelWhitelist, keyGroupRefusal, whitelistRefusal } from '../middleware/model-access';
import { createNativeProxy } from '../routes/native-proxy';
import { createNotFound } from '../middleware/not-found';
import { createPreviousResponse } from '../middleware/previous-response';
import { createKeptThinking } from '../middleware/kept-thinking';
import { createCreditReservation, createReservationEstimate, type CreditReservationFormat } from '../middleware/credit-reservation';
import { createRateLimit } from '../middleware/rate-limit';
import { createRequestContext } from '../middleware/request-context';
import { createResolveAlias } from '../middleware/resolve-alias';
import { createNativeViaChatUpstream } from '../routes/native-via-chat-upstream';
import { createResponses } from '../routes/responses';
import { createStoredResponses } from '../routes/stored-responses';
import { createMessageBatches } from '../routes/message-batches';
import { createFileAccessCheck } from '../middleware/file-access';
import { createFiles } from '../routes/files';
import { chatCompletionsSchema, countTokensSchema, createValidateBody, messagesSchema, responsesSchema } from '../middleware/validate-body';
import { createVersionHeader } from '../middleware/version-header';

export interface AppDependencies {
  /** The configuration at start-up (ignored when `configSource` is given). */
  config: GatewayConfig;
  /** Where the current configuration is read; a reload replaces it. Default: a source of `config`. */
  configSource?: ConfigSource;
  store: GatewayStore;
  /** The teams, config.json's and the admin API's. Default: a directory over the store's team role, read again when over 1 s old. */
  teamDirectory?: TeamDirectory;
  /** The client of the top-level upstream (the basic key group's). */
  upstream: UpstreamClient;
  /** The clients of every key group's upstream. Default: a pool around `upstream`. */
  upstreams?: UpstreamPool;
  logger: Logger;
  /** True when `upstream` is the embedded simulated upstream (reported by /health). */
  simulated?: boolean;
  /** True once the instance is draining before a shutdown: `/health` answers 503 `draining`. Default: never. */
  draining?: () => boolean;
  /** Extra finish steps (after settlement, before the log line). */
  afterResponseSteps?: AfterResponseStep[];
  /** Integrator hooks (see lib/pipeline/hooks.ts). */
  hooks?: GatewayHooks | GatewayHooks[];
  /** The metrics registry. Default: a new one. */
  metrics?: GatewayMetrics;
  /** Clock for rotated-secret expiry and the UTC month of the credit cap, epoch ms. Default: the real clock. */
  clock?: Clock;
  /** Sends budget alerts (lib/alerts/); absent: no alerts are claimed (no webhook configured). */
  alerts?: AlertDispatcher;
  /**
   * Handle each request inside the logger's request scope, so that lines other code writes through
   * `logger` during it carry its `request_id` (see `needsRequestScope` in lib/gateway.ts). Default true.
   */
  requestScope?: boolean;
  /** Tracing (lib/observability/tracing.ts; null or absent: off). */
  tracing?: Tracing | null;
}

/** Finish-step trackers of the routers built here (see `waitForAfterResponseSteps`). */
const afterResponseTrackers = new WeakMap<object, () => Promise<void>>();

/**
 * Resolves once the finish steps (settlement, log line) of every request of this router that has
 * closed are done (graceful shutdown waits for it before closing the store).
 */
export function waitForAfterResponseSteps(router: Router): Promise<void> {
  return afterResponseTrackers.get(router)?.() ?? Promise.resolve();
}

/** Give a handler the step name the route table shows. */
function named<T extends RequestHandler>(name: string, handler: T): T {
  return Object.defineProperty(handler, 'name', { value: name });
}

/** Build the gateway's routes as a Router, mountable anywhere (`parent.use('/llm', router)`). */
export function createGatewayRouter(deps: AppDependencies): Router {
  const { store, upstream } = deps;
  const logger = withRequestIds(deps.logger);
  const source = deps.configSource ?? createConfigSource(deps.config);
  const config = source.config;
  // Read per request: a reload swaps config.json's, the admin API adds its own (lib/people/team-directory.ts).
  const teamDirectory = deps.teamDirectory ?? createTeamDirectory({ store: teamStoreOf(store), fileTeams: () => source.config.teams });
  const teams = () => teamDirectory.list();
  const catalogue: Catalogue = createLiveCatalogue(source);
  const upstreams = deps.upstreams ?? createUpstreamPool({ defaultClient: upstream, defaultTargets: config.upstream.targets });
  const hooks = mergeHooks(deps.hooks);
  const metrics = deps.metrics ?? createMetrics();
  const clock = deps.clock ?? systemClock;

  const router = Router();
  const onResponse: AfterResponseStep = async (ctx, res) => {
    const record = createUsageRecord(ctx, res);
    const view = createHookContext(ctx);
    for (const hook of hooks.onResponse) await hook(record, view);
  };
  // Credit settlement runs first: whatever a later step does, the usage is recorded.
  const afterResponseSteps: AfterResponseStep[] = [createSettlement(store, clock, logger), ...(deps.afterResponseSteps ?? []), (ctx, res) => metrics.recordRequest(ctx, res)];
  if (deps.alerts) {
    // After settlement: the month's spend read back includes this request.
    afterResponseSteps.splice(1, 0, createBudgetAlerts({ store, dispatcher: deps.alerts, clock, teams, defaultThresholds: () => source.config.alerts.thresholds }));
  }
  registerSpendGauge(metrics.registry, store, clock);
  // The clients the key groups use now: one a reload replaced is no longer reported.
  metrics.watchUpstreams(() => upstreams.inUse(catalogue.keyGroups));
  if (hooks.onResponse.length > 0) afterResponseSteps.push(onResponse);
  const afterResponse = createAfterResponse({ logger, hooks: afterResponseSteps });
  afterResponseTrackers.set(router, afterResponse.settled);
  const requestContext = createRequestContext({ onFinish: afterResponse, scope: deps.requestScope ?? true, tracing: deps.tracing });
  const hostCheck = createHostCheck({ baseUrl: config.baseUrl });
  const jsonBody = createJsonBody({
    limitBytes: config.limits.bodyBytes,
    bodyTimeoutMs: config.limits.bodyTimeoutMs,
    minBytesPerSecond: config.limits.bodyMinBytesPerSecond,
  });
  // The key prefixes, read per request (a reload can change the key groups), listed again only when
  // the key groups change.
  let prefixList: { of: readonly KeyGroupConfig[]; prefixes: string[] } | null = null;
  const prefixes = () => {
    if (prefixList?.of !== catalogue.keyGroups) {
      prefixList = { of: catalogue.keyGroups, prefixes: catalogue.keyGroups.map((group) => group.keyPrefix) };
    }
    return prefixList.prefixes;
  };
  const afterAuth = hooks.afterAuth.length > 0 ? [createHookStep(hooks.afterAuth)] : [];
  const authStep = (accept: AuthHeaders) => named('auth', createAuth({ store, accept, prefixes, now: clock }));
  const auth = (accept: AuthHeaders) => [authStep(accept), ...afterAuth];
  const resolveAlias = named('resolveAlias', createResolveAlias({ catalogue }));
  const keyGroupCheck = named('keyGroupCheck', createKeyGroupCheck({ catalogue }));
  const modelWhitelist = named('modelWhitelist', createModelWhitelist());
  // The admission (rate-limit step) takes the credit hold too, in the same store round trip: each
  // billed route has its own rate-limit step, which knows the route's estimate.
  const creditOptions = (format: CreditReservationFormat) => ({
    store, catalogue, format, clock, teams,
    reservation: () => source.config.reservation,
    reservationTtlMs: () => source.config.upstream.timeoutMs,
    // A native body the byte bound refuses is measured by its upstream's count_tokens.
    measureWith: format === 'native' ? (ctx: RequestContext) => {
      const group = catalogue.keyGroup(ctx.keyGroup ?? DEFAULT_KEY_GROUP);
      return group?.upstream.kind === 'native' ? upstreams.forGroup(group) : undefined;
    } : undefined,
  });
  /** On a key changed since auth read it: the key group and whitelist checks again (routes with a model). */
  const recheck = (ctx: RequestContext) => (ctx.model ? keyGroupRefusal(catalogue, ctx) ?? whitelistRefusal(ctx) : null);
  const rateLimitFor = (format: CreditReservationFormat | null) => named('rateLimit', createRateLimit({
    store, recheck, now: clock,
    reservationFor: format === null ? undefined : createReservationEstimate(creditOptions(format)),
  }));
  const rateLimit = rateLimitFor(null);
  const creditReservation = (format: CreditReservationFormat) =>
    [rateLimitFor(format), named('creditReservation', createCreditReservation(creditOptions(format)))];
  /** count_tokens is not billed: counted against the rate limit, nothing reserved. */
  const notBilled: RequestHandler[] = [rateLimit];
  const beforeUpstream = [...(hooks.beforeUpstream.length > 0 ? [createHookStep(hooks.beforeUpstream)] : []), metrics.trackOpenStreams, createUpstreamMark()];

  /**
   * The shared steps every route that reaches the upstream takes, in order (see REQUIRED_UPSTREAM_STEPS).
   * The key is checked before a byte of the body is read: a caller without a key gets no inflating,
   * buffering or parsing done for it.
   */
  const upstreamSteps = (accept: AuthHeaders, validate: RequestHandler, version: RequestHandler[], billing: RequestHandler[]): RequestHandler[] => [
    authStep(accept), jsonBody, ...afterAuth, ...version, named('validateBody', validate), resolveAlias, keyGroupCheck, modelWhitelist, ...billing, ...beforeUpstream,
  ];
  const versionHeader = [named('versionHeader', createVersionHeader())];

  /** The native upstream of a request's key group; 404 for a key group whose upstream speaks chat-completions. */
  const nativeUpstreamOf = (ctx: RequestContext, feature: string): UpstreamClient => {
    const group = catalogue.keyGroup(ctx.keyGroup ?? DEFAULT_KEY_GROUP);
    if (!group || group.upstream.kind !== 'native') throw errors.notFound(`${feature} are not available for key group "${ctx.keyGroup}" (its upstream speaks chat-completions)`);
    return upstreams.forGroup(group);
  };
  /** Per key group, which handler serves each route (the fork). */
  const byKeyGroup = (handlerFor: (group: KeyGroupConfig, client: UpstreamClient) => RequestHandler) =>
    createKeyGroupDispatch({ catalogue, handlerFor: (group) => handlerFor(group, upstreams.forGroup(group)) });
  const messagesHandler = byKeyGroup((group, client) => {
    if (group.upstream.kind === 'native') return createNativeProxy({ upstream: client, path: '/v1/messages' });
    if (group.reverseTranslation) return createNativeViaChatUpstream({ upstream: client });
    return createRouteRefusal(
      `keys of key group "${group.id}" reach their models through POST /v1/chat/completions; ` +
        'the native route is not enabled for this key group (the operator can turn on keyGroups[].reverseTranslation)',
    );
  });
  const countTokensHandler = byKeyGroup((group, client) => group.upstream.kind === 'native'
    ? createNativeProxy({ upstream: client, path: '/v1/messages/count_tokens' })
    : createRouteRefusal(`POST /v1/messages/count_tokens is not available for key group "${group.id}" (its upstream speaks chat-completions)`));
  const chatHandler = byKeyGroup((group, client) => group.upstream.kind === 'native'
    ? createChatCompletions({ upstream: client, catalogue, logger, store, settings: () => source.config.responses })
    : createChatPassthrough({ upstream: client, catalogue }));
  // Responses: translated for native upstreams; refused for chat-completions upstreams (docs/responses.md).
  const responsesHandler = byKeyGroup((group, client) => group.upstream.kind === 'native'
    ? createResponses({
      upstream: client, catalogue, store, logger, settings: () => source.config.responses, limitBytes: () => source.config.limits.bodyBytes,
    })
    : createRouteRefusal(`POST /v1/responses is not available for key group "${group.id}" (its upstream speaks chat-completions); use POST /v1/chat/completions`));
  const storedResponses = createStoredResponses({ store });
  const files = createFiles({
    store, upstreamFor: (ctx) => nativeUpstreamOf(ctx, 'Files'),
    uploadLimits: () => ({
      limitBytes: source.config.limits.fileBytes,
      rate: { windowMs: source.config.limits.bodyTimeoutMs, minBytesPerSecond: source.config.limits.bodyMinBytesPerSecond },
    }),
  });
  const fileAccess = named('fileAccess', createFileAccessCheck(store));
  const batches = createMessageBatches({
    store, catalogue, logger, clock, teams,
    reservation: () => source.config.reservation, baseUrl: () => source.config.baseUrl,
    upstreamFor: (ctx) => nativeUpstreamOf(ctx, 'Message Batches'),
  });
  // Before the admission: the stored conversation goes upstream, so the credit hold counts it.
  const previousResponse = createPreviousResponse({ store, limitBytes: () => source.config.limits.bodyBytes });
  // Before the admission too: the thinking a tool loop's turn gets back goes upstream with it.
  const keptThinking = (format: 'chat' | 'responses') => createKeptThinking({ store, catalogue, format });

  router.use(requestContext, hostCheck);
  router.get('/healthz', createLiveness());
  // Claude Code's connection warm-up and preflight (`HEAD`/`GET <base URL>/api/hello`), answered as the API does.
  router.get('/api/hello', createLiveness());
  router.get('/health', createHealth({ upstream: () => upstreams.forGroup(catalogue.keyGroup(DEFAULT_KEY_GROUP)!), store, simulated: deps.simulated ?? false, draining: deps.draining, targets: () => upstreams.describe(catalogue.keyGroups) }));
  router.get('/metrics', createMetricsEndpoint({ registry: metrics.registry, token: () => config.metricsToken, privateMetrics: [SPEND_GAUGE_NAME] }));
  router.post('/v1/messages',
    ...upstreamSteps('native', createValidateBody(messagesSchema), [...versionHeader, fileAccess], creditReservation('native')), named('upstreamMessages', messagesHandler));
  router.post('/v1/messages/count_tokens',
    ...upstreamSteps('native', createValidateBody(countTokensSchema), [...versionHeader, fileAccess], notBilled), named('upstreamCountTokens', countTokensHandler));
  router.post('/v1/chat/completions',
    ...upstreamSteps('chat', createValidateBody(chatCompletionsSchema), [], [keptThinking('chat'), ...creditReservation('chat')]), named('upstreamChat', chatHandler));
  router.post('/v1/responses',
    ...upstreamSteps('chat', createValidateBody(responsesSchema), [], [previousResponse, keptThinking('responses'), ...creditReservation('responses')]), named('upstreamResponses', responsesHandler));
  router.get('/v1/responses/:id', ...auth('chat'), rateLimit, storedResponses.read);
  router.delete('/v1/responses/:id', ...auth('chat'), rateLimit, storedResponses.remove);
  router.get('/v1/models', ...auth('either'), rateLimit, createListModels({ catalogue }));
  router.get('/v1/models/:id', ...auth('either'), rateLimit, createRetrieveModel({ catalogue }));
  // Message Batches: each request's model is checked by the create step itself (docs/batches-files.md).
  const batchSteps = [...auth('native'), ...versionHeader, rateLimit];
  // The key is checked before the body is read, as on every route (middleware/auth.ts).
  router.post('/v1/messages/batches', authStep('native'), jsonBody, ...afterAuth, ...versionHeader, rateLimit, named('messageBatchesCreate', batches.create));
  router.get('/v1/messages/batches', ...batchSteps, named('messageBatchesList', batches.list));
  router.get('/v1/messages/batches/:id', ...batchSteps, named('messageBatchesRetrieve', batches.retrieve));
  router.post('/v1/messages/batches/:id/cancel', ...batchSteps, named('messageBatchesCancel', batches.cancel));
  router.get('/v1/messages/batches/:id/results', ...batchSteps, named('messageBatchesResults', batches.results));
  router.delete('/v1/messages/batches/:id', ...batchSteps, named('messageBatchesDelete', batches.remove));
  // Files: pinned to the key that uploaded them (docs/batches-files.md).
  router.post('/v1/files', ...batchSteps, named('filesUpload', files.upload));
  router.get('/v1/files', ...batchSteps, named('filesList', files.list));
  router.get('/v1/files/:id', ...batchSteps, named('filesMetadata', files.metadata));
  router.get('/v1/files/:id/content', ...batchSteps, named('filesContent', files.content));
  router.delete('/v1/files/:id', ...batchSteps, named('filesDelete', files.remove));
  router.use(createAdminSurface({
    config, store, catalogue, logger, clock,
    teams, teamDirectory,
    upstreams: () => upstreams.describe(catalogue.keyGroups),
    aliases: () => source.config.aliases,
    defaultRateLimitPerMinute: () => source.config.defaults.rateLimitPerMinute,
    alerts: () => ({ thresholds: source.config.alerts.thresholds, webhookConfigured: deps.alerts !== undefined }),
  }));
  router.use(createNotFound({ routes: PUBLIC_ROUTES }));
  router.use(createErrorHandler({ logger, bodyLimitBytes: config.limits.bodyBytes }));
  return router;
}
