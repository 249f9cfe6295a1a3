/**
 * `GET /v1/models`: the catalogue IDs the key may use (its key group's, narrowed by its whitelist),
 * never aliases. Each entry carries the fields
 * both client families read: `id`, `object: "model"`, `created`, `owned_by` (chat SDK) and `type`,
 * `display_name`, `created_at` (native SDK); the list carries `object: "list"` and the native paging
 * fields (`has_more: false`, `first_id`, `last_id`).
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/catalogue';
import { getContext } from '../lib/context';
import { DEFAULT_KEY_GROUP } from '../lib/key-groups';
import { sendJson } from '../lib/json-reply';
import { isModelAllowed } from './model-access';

/** Catalogue publication time reported for every model (the listing has no per-model dates). */
const PUBLISHED_AT = '2026-01-01T00:00:00Z';

export function createListModels(options: { catalogue: Catalogue }): RequestHandler {
  return (_req, res) => {
    const ctx = getContext(res);
    const key = ctx.key!;
    // Only the models of the key's group (its model family), narrowed by the key's whitelist.
    const data = options.catalogue.models
      .filter((model) => options.catalogue.groupOfModel(model.id)?.id === (ctx.keyGroup ?? DEFAULT_KEY_GROUP))
      .filter((model) => isModelAllowed(key, model.id))
      .map((model) => ({
        id: model.id,
        object: 'model',
        type: 'model',
        created: Math.floor(Date.parse(PUBLISHED_AT) / 1000),
        created_at: PUBLISHED_AT,
        owned_by: 'model-gateway',
        display_name: model.displayName ?? model.id,
      }));
    sendJson(res, 200, { object: 'list', data, has_more: false, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null });
  };
}
