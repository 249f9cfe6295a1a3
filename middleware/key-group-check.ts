/**
 * Key group check (spec, Authentication rule 8): the resolved model must belong to the model family of
 * the key's group. A key of one group asking for a model of another gets 403 `model_not_allowed`
 * naming both groups. Runs after alias resolution, before the per-key whitelist.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/catalogue';
import { getContext } from '../lib/context';
import { errors } from '../lib/errors';
import { DEFAULT_KEY_GROUP } from '../lib/key-groups';

export function createKeyGroupCheck(options: { catalogue: Catalogue }): RequestHandler {
  return (_req, res, next) => {
    const ctx = getContext(res);
    const keyGroup = ctx.keyGroup ?? DEFAULT_KEY_GROUP;
    if (!options.catalogue.keyGroup(keyGroup)) {
      return next(errors.modelNotAllowed(`the key group "${keyGroup}" of this key is not configured on this gateway`));
    }
    const modelGroup = options.catalogue.groupOfModel(ctx.model!.id);
    if (modelGroup?.id === keyGroup) return next();
    next(errors.modelNotAllowed(
      `model "${ctx.model!.id}" belongs to key group "${modelGroup?.id ?? 'none'}", and this key is of key group "${keyGroup}"; ` +
        'GET /v1/models lists the models of your key group',
    ));
  };
}
