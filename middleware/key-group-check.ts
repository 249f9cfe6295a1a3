/**
 * Key group check (spec, Authentication rule 8): the resolved model must belong to the model family of
 * the key's group. A key of one group asking for a model of another gets 403 `model_not_allowed`
 * naming both groups. Runs after alias resolution, before the per-key whitelist.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/catalogue';
import { createKeySettingsCheck, type RequestContext } from '../lib/context';
import { errors, type GatewayError } from '../lib/errors';
import { DEFAULT_KEY_GROUP } from '../lib/key-groups';

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
