/**
 * The shipped catalogue: the `models` and `aliases` of the package's own config.json, the default of a
 * configuration that lists no `models` (a file's `models` is its whole catalogue, as it says). An
 * operator's `modelOverrides` are merged over the catalogue by `id`: a model's fields replaced one by
 * one, a new id added.
 */
import path from 'node:path';
import { ConfigError } from './config-error';
import type { ModelConfig } from './types';

/** The package's config.json (from dist/lib/config/ up to the package's root). */
export const SHIPPED_CONFIG_FILE = path.resolve(__dirname, '..', '..', '..', 'config.json');

export interface ShippedCatalogue {
  models: ModelConfig[];
  aliases: Record<string, string>;
}

/**
 * Read the shipped catalogue. Read at every parse, not cached: when the operator's file is the shipped
 * config.json itself, a model removed from it and reloaded (SIGHUP) must not come back.
 * @param read reads and parses a JSON file (`readConfigFile`)
 * @throws ConfigError when the file cannot be read or holds no `models` (replaced, e.g. by a mount
 *   over it), saying to list `models` or to name the operator's own file with GATEWAY_CONFIG
 */
export function readShippedCatalogue(read: (file: string) => unknown): ShippedCatalogue {
  let shipped: { models?: unknown; aliases?: unknown };
  try {
    shipped = read(SHIPPED_CONFIG_FILE) as typeof shipped;
  } catch (err) {
    throw new ConfigError(`invalid configuration: models: not listed, and the shipped catalogue cannot be read (${(err as Error).message}); list "models"`);
  }
  if (!Array.isArray(shipped?.models) || shipped.models.length === 0) {
    throw new ConfigError(`invalid configuration: models: not listed, and ${SHIPPED_CONFIG_FILE} holds no shipped catalogue (was it replaced? name your own file with GATEWAY_CONFIG instead), or list "models"`);
  }
  return { models: shipped.models as ModelConfig[], aliases: (shipped.aliases ?? {}) as Record<string, string> };
}

/**
 * The catalogue `base` in its order with each of `overrides` merged over the model of its id (its
 * fields replace the model's whole: a `pricing` given is the whole pricing), then the overrides of ids
 * `base` does not have, in their order.
 * @throws ConfigError for an id twice in `overrides`, or a new model without `upstreamModel` and `pricing`
 */
export function mergeModels(base: readonly ModelConfig[], overrides: ReadonlyArray<Partial<ModelConfig> & { id: string }>): ModelConfig[] {
  const byId = new Map<string, Partial<ModelConfig> & { id: string }>();
  for (const model of overrides) {
    if (byId.has(model.id)) throw new ConfigError(`invalid configuration: modelOverrides: duplicate id "${model.id}"`);
    byId.set(model.id, model);
  }
  const merged = base.map((model) => ({ ...model, ...byId.get(model.id) }));
  const baseIds = new Set(base.map((model) => model.id));
  for (const model of overrides) {
    if (baseIds.has(model.id)) continue;
    if (model.upstreamModel === undefined || model.pricing === undefined) {
      throw new ConfigError(`invalid configuration: modelOverrides: "${model.id}" is not in the catalogue, so it needs "upstreamModel" and "pricing"`);
    }
    merged.push(model as ModelConfig);
  }
  return merged;
}
