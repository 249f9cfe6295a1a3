/**
 * The library API of model-gateway (package `main`): build a gateway in your own process, mount it,
 * and add your own steps at the named hook points (docs/extending.md).
 *
 *   import { createGateway } from 'model-gateway';
 *   const gateway = await createGateway({ config: { upstream: { url: 'https://...' } }, hooks: { ... } });
 *   createHttpServer(gateway.app).listen(8080);  // or gateway.app.listen(8080), or parent.use('/llm', gateway.router)
 *
 * Only what integrators use is exported here; the pipeline's own modules are internal.
 */
// Building and serving a gateway.
export { createGateway } from './gateway';
export type { Gateway, GatewayOptions, ReloadResult } from './gateway';
export { createGatewayRouter } from './app';
export type { AppDependencies } from './app';
export { startGateway } from './server';
export { createHttpServer } from './http/http-server';
export type { RunningGateway, StartOptions } from './server';

// Hooks: the read-only request view, the usage record, and the hook types.
export type { GatewayHooks, GatewayHookContext, RequestHook, ResponseHook, UsageRecord } from './pipeline/hooks';
export type { Usage } from './pipeline/context';

// Errors a hook throws to refuse a request (rendered in the route's own shape).
export { GatewayError, errors } from './http/errors';
export type { NativeErrorType, RouteFormat, GatewayErrorOptions } from './http/errors';

// Configuration.
export { parseConfig, loadConfig, ConfigError } from './config';
export type { GatewayConfig, ModelConfig, ModelPricing, KeyConfig, UpstreamConfig } from './config';
export type { KeyGroupConfig } from './config/key-groups';

// Stores: the built-in ones, and the interface a store of your own implements.
export { createStore, MemoryStore } from './store';
export type {
  AlertQueueStore, AuditLogStore, GatewayStore, KeyRecord, KeyStore, LedgerStore, NewKey, RequestLogStore, Reservation, ResponseStore, StoreConnection, UsageEntry, UsageTotals,
} from './store/types';
export type { Logger } from './observability/logger';
