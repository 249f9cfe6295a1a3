/**
 * `GET /v1/models`: the catalogue IDs the key may use (its key group's, narrowed by its whitelist),
 * never aliases. Each entry carries the fields
 * both client families read: `id`, `object: "model"`, `created`, `owned_by` (chat SDK) and `type`,
 * `display_name`, `created_at` (native SDK); the list carries `object: "list"` and the native paging
 * fields (`has_more: false`, `first_id`, `last_id`).
 *
 * `GET /v1/models/{id}` (`models.retrieve` in both SDK families): one of those models, in the caller's
 * shape: native (`type`, `id`, `display_name`, `created_at`; wire-formats: models get) for a caller that
 * sends `x-api-key` or a version header, else the OpenAI model object (`id`, `object`, `created`,
 * `owned_by`). An id the key may not use, alias included, is a 404 in that same shape.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import type { ModelConfig } from '../lib/config';
import { getContext, type RequestContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { DEFAULT_KEY_GROUP } from '../lib/config/key-groups';
import { sendJson } from '../lib/http/json-reply';
import { isModelAllowed } from '../middleware/model-access';

/** Catalogue publication time reported for every model (the listing has no per-model dates). */
const PUBLISHED_AT = '2026-01-01T00:00:00Z';

/** The catalogue models the request's key may use: its key group's, narrowed by its whitelist. */
function usableModels(catalogue: Catalogue, ctx: RequestContext): ModelConfig[] {
  return catalogue.models
    .filter((model) => catalogue.groupOfModel(model.id)?.id === (ctx.keyGroup ?? DEFAULT_KEY_GROUP))
    .filter((model) => isModelAllowed(ctx.key!, model.id));
}

/** A model entry with the fields of both shapes (native and OpenAI). */
function modelEntry(model: ModelConfig) {
  return {
    id: model.id,
    object: 'model',
    type: 'model',
    created: Math.floor(Date.parse(PUBLISHED_AT) / 1000),
    created_at: PUBLISHED_AT,
    owned_by: 'model-gateway',
    display_name: model.displayName ?? model.id,
  };
}

export function createListModels(options: { catalogue: Catalogue }): RequestHandler {
  return (_req, res) => {
    const data = usableModels(options.catalogue, getContext(res)).map(modelEntry);
    sendJson(res, 200, { object: 'list', data, has_more: false, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null });
  };
}

/** `GET /v1/models/:id`; a model the key may not use is a 404 (`errors.modelNotFound`) in the caller's shape. */
export function createRetrieveModel(options: { catalogue: Catalogue }): RequestHandler {
  return (req, res, next) => {
    const ctx = getContext(res);
    const native = req.headers['x-api-key'] !== undefined || req.headers['anthropic-version'] !== undefined || req.headers['vendor-version'] !== undefined;
    ctx.format = native ? 'native' : 'chat';
    const id = String(req.params.id);
    const model = usableModels(options.catalogue, ctx).find((candidate) => candidate.id === id);
    if (!model) {
      return next(errors.modelNotFound(`model "${id.slice(0, 200)}" is not one this key may use; GET /v1/models lists those it may (catalogue IDs, not aliases)`));
    }
    const { id: modelId, type, display_name, created_at, object, created, owned_by } = modelEntry(model);
    sendJson(res, 200, native ? { type, id: modelId, display_name, created_at } : { id: modelId, object, created, owned_by });
  };
}
