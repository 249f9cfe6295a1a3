/**
 * Alias resolution: the request's `model` (a catalogue ID or alias) becomes its catalogue entry on the
 * context, before whitelisting and billing. A model outside the catalogue gets 404.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import { getContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';

export function createResolveAlias(options: { catalogue: Catalogue }): RequestHandler {
  return (req, res, next) => {
    const ctx = getContext(res);
    const requested = String(req.body.model);
    const model = options.catalogue.resolve(requested);
    if (!model) {
      return next(errors.modelNotFound(`model "${requested.slice(0, 256)}" is not in the catalogue; GET /v1/models lists the IDs you may use`));
    }
    ctx.requestedModel = requested;
    ctx.model = model;
    ctx.stream = req.body.stream === true;
    next();
  };
}
