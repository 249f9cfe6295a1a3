/** The model catalogue derived from the config: canonical IDs, aliases, pricing. */
import type { GatewayConfig, ModelConfig } from './config';
import type { Usage } from './context';

export interface Catalogue {
  /** Every catalogue entry, in config order. */
  readonly models: readonly ModelConfig[];
  /** The entry a model ID or alias names, or undefined. Aliases resolve to their canonical entry. */
  resolve(modelOrAlias: string): ModelConfig | undefined;
  /** Default `max_tokens` for a model (model's own, else the configured default). */
  defaultMaxTokens(model: ModelConfig): number;
}

/** Build the catalogue of a validated config. */
export function createCatalogue(config: GatewayConfig): Catalogue {
  const byId = new Map(config.models.map((model) => [model.id, model]));
  return {
    models: config.models,
    resolve(modelOrAlias) {
      return byId.get(modelOrAlias) ?? byId.get(config.aliases[modelOrAlias] ?? '');
    },
    defaultMaxTokens(model) {
      return model.defaultMaxTokens ?? config.defaults.maxTokens;
    },
  };
}

/**
 * Credits of a reply's usage at a model's prices (credits per million tokens; cache writes and reads
 * priced at `cacheWritePerMillion` / `cacheReadPerMillion`, defaulting to the input price).
 */
export function priceUsage(model: ModelConfig, usage: Usage): number {
  const p = model.pricing;
  const micro =
    usage.input_tokens * p.inputPerMillion +
    usage.output_tokens * p.outputPerMillion +
    usage.cache_creation_input_tokens * (p.cacheWritePerMillion ?? p.inputPerMillion) +
    usage.cache_read_input_tokens * (p.cacheReadPerMillion ?? p.inputPerMillion);
  return micro / 1_000_000;
}
