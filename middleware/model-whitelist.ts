/** Model whitelist: the resolved canonical model must be one the key may use (403 otherwise). */
import type { RequestHandler } from 'express';
import { createKeySettingsCheck, type RequestContext } from '../lib/context';
import { errors, type GatewayError } from '../lib/errors';
import type { KeyRecord } from '../lib/store/types';

/** Whether a key may use a canonical model ID (`allowedModels` null means every model). */
export function isModelAllowed(key: Pick<KeyRecord, 'allowedModels'>, modelId: string): boolean {
  return key.allowedModels === null || key.allowedModels.includes(modelId);
}

/** The 403 a request gets when its key may not use its model, or null when it may. */
export function whitelistRefusal(ctx: RequestContext): GatewayError | null {
  return ctx.key && ctx.model && isModelAllowed(ctx.key, ctx.model.id)
    ? null
    : errors.modelNotAllowed(`this key may not use model "${ctx.model?.id}"; GET /v1/models lists the models it may use`);
}

export function createModelWhitelist(): RequestHandler {
  return createKeySettingsCheck(whitelistRefusal);
}
