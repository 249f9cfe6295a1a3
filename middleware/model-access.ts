/**
 * Model access: may this key use the model its request resolved to? Two steps, in this order:
 * - the key group check (spec, Authentication rule 8): the model must belong to the model family of
 *   the key's group; a key of one group asking for a model of another gets 403 `model_not_allowed`
 *   naming both groups;
 * - the per-key whitelist: the canonical model must be one the key may use (403 otherwise).
 * Both run after alias resolution; a refusal made on a key snapshot is confirmed first (createKeySettingsCheck).
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import { createKeySettingsCheck, type RequestContext } from '../lib/pipeline/context';
import { errors, type GatewayError } from '../lib/http/errors';
import { DEFAULT_KEY_GROUP } from '../lib/config/key-groups';
import type { KeyRecord } from '../lib/store/types';

/** The 403 a request gets when its key's group does not serve its model, or null when it does. */
export function keyGroupRefusal(catalogue: Catalogue, ctx: RequestContext): GatewayError | null {
  const keyGroup = ctx.keyGroup ?? DEFAULT_KEY_GROUP;
  if (!catalogue.keyGroup(keyGroup)) {
    return errors.modelNotAllowed(`the key group "${keyGroup}" of this key is not configured on this gateway`);
  }
  const modelGroup = catalogue.groupOfModel(ctx.model!.id);
  if (modelGroup?.id === keyGroup) return null;
  return errors.modelNotAllowed(
    `model "${ctx.model!.id}" belongs to key group "${modelGroup?.id ?? 'none'}", and this key is of key group "${keyGroup}"; ` +
      'GET /v1/models lists the models of your key group',
  );
}

export function createKeyGroupCheck(options: { catalogue: Catalogue }): RequestHandler {
  return createKeySettingsCheck((ctx) => keyGroupRefusal(options.catalogue, ctx));
}

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
