/** The model catalogue derived from the config: canonical IDs, aliases, pricing, key groups. */
import type { GatewayConfig, ModelConfig } from '.';
import type { KeyGroupConfig } from './key-groups';

export interface Catalogue {
  /** Every catalogue entry, in config order. */
  readonly models: readonly ModelConfig[];
  /** The key groups, the basic group `default` first. */
  readonly keyGroups: readonly KeyGroupConfig[];
  /** The entry a model ID or alias names, or undefined. Aliases resolve to their canonical entry. */
  resolve(modelOrAlias: string): ModelConfig | undefined;
  /**
   * `max_tokens` of a translated request that gives none: the model's `defaultMaxTokens`, else its
   * output ceiling (`capabilities.maxOutputTokens`, as the Responses API's own default), else
   * `defaults.maxTokens`.
   */
  defaultMaxTokens(model: ModelConfig): number;
  /** The key group a canonical model ID belongs to (its model family), or undefined. */
  groupOfModel(modelId: string): KeyGroupConfig | undefined;
  /** The key group with this id, or undefined. */
  keyGroup(id: string): KeyGroupConfig | undefined;
}

/** Build the catalogue of a validated config. */
export function createCatalogue(config: GatewayConfig): Catalogue {
  const byId = new Map(config.models.map((model) => [model.id, model]));
  const groupByModel = new Map<string, KeyGroupConfig>();
  for (const group of config.keyGroups) for (const model of group.models) groupByModel.set(model, group);
  return {
    models: config.models,
    keyGroups: config.keyGroups,
    resolve(modelOrAlias) {
      return byId.get(modelOrAlias) ?? byId.get(config.aliases[modelOrAlias] ?? '');
    },
    defaultMaxTokens(model) {
      return model.defaultMaxTokens ?? model.capabilities?.maxOutputTokens ?? config.defaults.maxTokens;
    },
    groupOfModel(modelId) {
      return groupByModel.get(modelId);
    },
    keyGroup(id) {
      return config.keyGroups.find((group) => group.id === id);
    },
  };
}

/**
 * A catalogue that always answers from the current config of `source`: the one indirection through
 * which the pipeline reads models, aliases, pricing and key groups, so a reload (SIGHUP) takes effect
 * for the next request while requests in flight keep the entries they already resolved.
 */
export function createLiveCatalogue(source: { readonly catalogue: Catalogue }): Catalogue {
  return {
    get models() {
      return source.catalogue.models;
    },
    get keyGroups() {
      return source.catalogue.keyGroups;
    },
    resolve: (modelOrAlias) => source.catalogue.resolve(modelOrAlias),
    defaultMaxTokens: (model) => source.catalogue.defaultMaxTokens(model),
    groupOfModel: (modelId) => source.catalogue.groupOfModel(modelId),
    keyGroup: (id) => source.catalogue.keyGroup(id),
  };
}

export { priceUsage } from '../billing/pricing';
