/**
 * The Express app: the whole request path, written once, in order.
 *
 *   request context -> host check -> JSON body -> auth -> version header (native) -> validation
 *   -> alias resolution -> model whitelist -> quota -> native proxy | chat translator
 *   ... response closes -> finish (settle, log)
 */
import express, { type Express, type RequestHandler } from 'express';
import { createCatalogue, type Catalogue } from './catalogue';
import type { GatewayConfig } from './config';
import { createFinisher, type FinishHook } from './finish';
import type { Logger } from './logger';
import type { GatewayStore } from './store/types';
import type { UpstreamClient } from './upstream';
import { createAuth, type AuthHeaders } from '../middleware/auth';
import { createChatCompletions } from '../middleware/chat-completions';
import { createErrorHandler } from '../middleware/error-handler';
import { createHealth, createLiveness } from '../middleware/health';
import { createHostCheck } from '../middleware/host-check';
import { createJsonBody } from '../middleware/json-body';
import { createListModels } from '../middleware/list-models';
import { createModelWhitelist } from '../middleware/model-whitelist';
import { createNativeProxy } from '../middleware/native-proxy';
import { createNotFound } from '../middleware/not-found';
import { createQuota } from '../middleware/quota';
import { createRequestContext } from '../middleware/request-context';
import { createResolveAlias } from '../middleware/resolve-alias';
import { chatCompletionsSchema, countTokensSchema, createValidateBody, messagesSchema } from '../middleware/validate-body';
import { createVersionHeader } from '../middleware/version-header';

export interface AppDependencies {
  config: GatewayConfig;
  store: GatewayStore;
  upstream: UpstreamClient;
  logger: Logger;
  /** True when `upstream` is the embedded simulated upstream (reported by /health). */
  simulated?: boolean;
  /** Extra finish steps (after settlement, before the log line). */
  finishHooks?: FinishHook[];
}

/** The routes of the public API, as `METHOD /path` (the path check suggests them). */
export const PUBLIC_ROUTES = [
  'POST /v1/messages',
  'POST /v1/messages/count_tokens',
  'POST /v1/chat/completions',
  'GET /v1/models',
  'GET /healthz',
  'GET /health',
];

/** Build the gateway app from its seams. */
export function createApp(deps: AppDependencies): Express {
  const { config, store, upstream, logger } = deps;
  const catalogue: Catalogue = createCatalogue(config);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const requestContext = createRequestContext({ onFinish: createFinisher({ logger, hooks: deps.finishHooks }) });
  const hostCheck = createHostCheck({ baseUrl: config.baseUrl });
  const jsonBody = createJsonBody({ limitBytes: config.limits.bodyBytes });
  const auth = (accept: AuthHeaders) => createAuth({ store, accept });
  const resolveAlias = createResolveAlias({ catalogue });
  const modelWhitelist = createModelWhitelist();
  const quota = createQuota();

  /** The shared steps every route that reaches the upstream takes, in order. */
  const upstreamSteps = (accept: AuthHeaders, validate: RequestHandler, version: RequestHandler[]): RequestHandler[] => [
    jsonBody, auth(accept), ...version, validate, resolveAlias, modelWhitelist, quota,
  ];
  const versionHeader = [createVersionHeader()];

  app.use(requestContext, hostCheck);
  app.get('/healthz', createLiveness());
  app.get('/health', createHealth({ upstream, store, simulated: deps.simulated ?? false }));
  app.post('/v1/messages',
    ...upstreamSteps('native', createValidateBody(messagesSchema), versionHeader),
    createNativeProxy({ upstream, path: '/v1/messages' }));
  app.post('/v1/messages/count_tokens',
    ...upstreamSteps('native', createValidateBody(countTokensSchema), versionHeader),
    createNativeProxy({ upstream, path: '/v1/messages/count_tokens' }));
  app.post('/v1/chat/completions',
    ...upstreamSteps('chat', createValidateBody(chatCompletionsSchema), []),
    createChatCompletions({ upstream, catalogue, logger }));
  app.get('/v1/models', auth('either'), createListModels({ catalogue }));
  app.use(createNotFound({ routes: PUBLIC_ROUTES }));
  app.use(createErrorHandler({ logger, bodyLimitBytes: config.limits.bodyBytes }));
  return app;
}
