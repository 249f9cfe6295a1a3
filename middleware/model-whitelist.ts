/** Model whitelist: the resolved canonical model must be one the key may use (403 otherwise). */
import type { RequestHandler } from 'express';
import { getContext } from '../lib/context';
import { errors } from '../lib/errors';
import type { KeyRecord } from '../lib/store/types';

/** Whether a key may use a canonical model ID (`allowedModels` null means every model). */
export function isModelAllowed(key: Pick<KeyRecord, 'allowedModels'>, modelId: string): boolean {
  return key.allowedModels === null || key.allowedModels.includes(modelId);
}

export function createModelWhitelist(): RequestHandler {
  return (_req, res, next) => {
    const ctx = getContext(res);
    if (ctx.key && ctx.model && isModelAllowed(ctx.key, ctx.model.id)) return next();
    next(errors.modelNotAllowed(`this key may not use model "${ctx.model?.id}"; GET /v1/models lists the models it may use`));
  };
}
