/**
 * The library API of model-gateway (package `main`): build a gateway in your own process, mount it,
 * add your own steps at the named hook points, or reuse its middleware factories and translators.
 *
 *   import { createGateway } from 'model-gateway';
 *   const gateway = await createGateway({ config: { upstream: { url: 'https://...' } }, hooks: { ... } });
 *   gateway.app.listen(8080);            // or: parent.use('/llm', gateway.router)
 *
 * See README "Extending" for the contract of each hook.
 */
export { createGateway, buildGateway, mergeConfigObjects, defaultConfigFile, needsRequestScope } from './gateway';
export type { Gateway, GatewayOptions, BuildOptions, ReloadResult } from './gateway';
export { createApp, createGatewayRouter } from './app';
export { PUBLIC_ROUTES } from './routes';
export type { AppDependencies } from './app';
export { startGateway } from './server';
export type { RunningGateway, StartOptions } from './server';

export { mergeHooks, createHookContext, createHookStep, createUsageRecord } from './hooks';
export type { GatewayHooks, GatewayHookContext, RequestHook, ResponseHook, UsageRecord, HookLists } from './hooks';
export { getContext, emptyUsage } from './context';
export type { RequestContext, Usage } from './context';

export { parseConfig, loadConfig, readConfigFile, configSchema, ConfigError } from './config';
export type { GatewayConfig, ModelConfig, ModelPricing, KeyConfig, UpstreamConfig, ConfigEnv } from './config';
export { DEFAULT_KEY_GROUP, DEFAULT_KEY_PREFIX } from './key-groups';
export type { KeyGroupConfig, KeyGroupUpstream, UpstreamKind } from './key-groups';
export { createCatalogue, createLiveCatalogue, priceUsage } from './catalogue';
export type { Catalogue } from './catalogue';
export { createConfigSource } from './config-source';
export type { ConfigSource } from './config-source';

export { GatewayError, errors, formatChatError, formatNativeError, mapUpstreamSocketError } from './errors';
export type { NativeErrorType, RouteFormat, GatewayErrorOptions } from './errors';
export { createLogger, withRequestIds, requestScope } from './logger';
export type { Logger } from './logger';
export { createMetrics, createMetricsEndpoint } from './metrics';
export type { GatewayMetrics } from './metrics';
export { createUpstreamClient } from './upstream';
export type { UpstreamClient, UpstreamOptions } from './upstream';
export { createUpstreamPool } from './upstream';
export type { UpstreamPool } from './upstream';
export { createStore, seedConfigKeys, MemoryStore } from './store';
export type { GatewayStore, KeyRecord, NewKey, Reservation, UsageEntry } from './store/types';
export { formatSse, createSseDecoder } from './sse';

// Middleware factories, one per pipeline step (each `createX(options): RequestHandler`).
export { createRequestContext } from '../middleware/request-context';
export { createHostCheck } from '../middleware/host-check';
export { createJsonBody } from '../middleware/json-body';
export { createAuth, extractApiKey } from '../middleware/auth';
export { createVersionHeader } from '../middleware/version-header';
export { createValidateBody, messagesSchema, countTokensSchema, chatCompletionsSchema } from '../middleware/validate-body';
export { createResolveAlias } from '../middleware/resolve-alias';
export { createKeyGroupCheck } from '../middleware/key-group-check';
export { createModelWhitelist, isModelAllowed } from '../middleware/model-whitelist';
export { createCreditReservation } from '../middleware/credit-reservation';
export { createKeyGroupDispatch } from '../middleware/key-group-dispatch';
export { createNativeProxy } from '../middleware/native-proxy';
export { createChatCompletions } from '../middleware/chat-completions';
export { createChatPassthrough } from '../middleware/chat-passthrough';
export { createNativeViaChatUpstream } from '../middleware/native-via-chat-upstream';
export { createListModels } from '../middleware/list-models';
export { createHealth, createLiveness } from '../middleware/health';
export { createNotFound } from '../middleware/not-found';
export { createErrorHandler } from '../middleware/error-handler';

// Translators: pure functions, no I/O.
export { convertChatRequest } from '../translators/chat-to-native-request';
export { convertNativeResponse } from '../translators/native-to-chat-response';
export { createChatStreamTransform } from '../translators/native-to-chat-stream';
export { mapStopReason } from '../translators/stop-reason';
export { mergeNativeUsage, convertUsageToChat } from '../translators/usage';
export { mapNativeErrorToChat } from '../translators/native-to-chat-errors';
export { convertNativeRequestToChat } from '../translators/native-to-chat-request';
export { convertChatCompletionToNative } from '../translators/chat-to-native-response';
export { createReverseStreamTransform } from '../translators/chat-to-native-stream';
export { mapFinishReasonToStopReason, convertChatUsageToNative, convertChatErrorToNative } from '../translators/chat-to-native-mapping';
export type * from '../translators/native-types';
export type * from '../translators/chat-types';
