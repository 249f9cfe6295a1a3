/**
 * What a reply costs, in credits (1 credit = 1 USD of the provider's list price), from the usage the
 * upstream reported: every usage field of wire-formats.md §2.2 at the model's prices. The provider's
 * published ratios, used where a catalogue entry leaves a price out, are named once here
 * (PUBLISHED_RATIOS); docs/spend.md cites the page and date of each.
 */
import type { ModelConfig, ModelPricing } from '../config';
import type { CompactionTokenCounts, Usage } from '../../translators/usage';

/**
 * The provider's published price ratios (platform.claude.com/docs/en/about-claude/pricing, and the
 * fast mode, data residency, batch processing and web search tool pages; read 2026-11-25):
 * - prompt cache: a read costs 0.1x the base input price, a 5-minute write 1.25x, a 1-hour write 2x;
 * - data residency: inference pinned to a region (`inference_geo` other than `global`) costs 1.1x on
 *   every token category;
 * - Message Batches: 0.5x on every token category (`service_tier: "batch"`);
 * - web search: 10 USD per 1,000 searches; web fetch: no charge beyond its tokens.
 * Fast mode differs by model: its multiplier is the catalogue entry's `fastModeMultiplier`.
 */
export const PUBLISHED_RATIOS = Object.freeze({
  cacheReadOfInput: 0.1,
  cacheWrite5mOfInput: 1.25,
  cacheWrite1hOfInput: 2,
  dataResidency: 1.1,
  batch: 0.5,
  webSearchPerRequest: 10 / 1000,
  webFetchPerRequest: 0,
});

/** `inference_geo` values that do not pin the region (no residency price): the default and "not reported". */
const UNPINNED_GEOS = new Set(['global', 'not_available']);

/** A model's prices with every default filled in (credits per million tokens; per request for server tools). */
export interface ResolvedPricing {
  input: number;
  output: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
  webSearch: number;
  webFetch: number;
  codeExecution: number;
  /** Multiplier of every token price for a fast-mode reply; null when the model has no fast mode. */
  fastMode: number | null;
}

/** Fill in the prices a catalogue entry leaves out with the published ratios (PUBLISHED_RATIOS). */
export function resolvePricing(p: ModelPricing): ResolvedPricing {
  return {
    input: p.inputPerMillion,
    output: p.outputPerMillion,
    cacheWrite5m: p.cacheWritePerMillion ?? p.inputPerMillion * PUBLISHED_RATIOS.cacheWrite5mOfInput,
    cacheWrite1h: p.cacheWrite1hPerMillion ?? p.inputPerMillion * PUBLISHED_RATIOS.cacheWrite1hOfInput,
    cacheRead: p.cacheReadPerMillion ?? p.inputPerMillion * PUBLISHED_RATIOS.cacheReadOfInput,
    webSearch: p.webSearchPerRequest ?? PUBLISHED_RATIOS.webSearchPerRequest,
    webFetch: p.webFetchPerRequest ?? PUBLISHED_RATIOS.webFetchPerRequest,
    codeExecution: p.codeExecutionPerRequest ?? 0,
    fastMode: p.fastModeMultiplier ?? null,
  };
}

/**
 * The multiplier of every token price of a reply: fast mode (the model's `fastModeMultiplier`, when
 * `speed` is `fast`), data residency (1.1x when `inference_geo` pins a region) and the batch rate
 * (0.5x when `service_tier` is `batch`), multiplied together as the provider's modifiers stack.
 */
export function rateMultiplier(model: ModelConfig, usage: Pick<Usage, 'speed' | 'inference_geo' | 'service_tier'>): number {
  const fast = usage.speed === 'fast' ? model.pricing.fastModeMultiplier ?? 1 : 1;
  const residency = usage.inference_geo !== null && !UNPINNED_GEOS.has(usage.inference_geo) ? PUBLISHED_RATIOS.dataResidency : 1;
  const batch = usage.service_tier === 'batch' ? PUBLISHED_RATIOS.batch : 1;
  return fast * residency * batch;
}

/** Credits (before multipliers) of one set of token counts at resolved prices; `oneHourWrites` of the writes at the 1-hour price. */
function priceTokens(p: ResolvedPricing, tokens: CompactionTokenCounts, oneHourWrites: number): number {
  const fiveMinuteWrites = tokens.cache_creation_input_tokens - oneHourWrites;
  return (tokens.input_tokens * p.input + tokens.output_tokens * p.output + fiveMinuteWrites * p.cacheWrite5m +
    oneHourWrites * p.cacheWrite1h + tokens.cache_read_input_tokens * p.cacheRead) / 1_000_000;
}

/**
 * Credits of a reply's usage at a model's prices: input, output, cache writes (5-minute and 1-hour at
 * their own prices), cache reads, and the compaction steps' tokens (`usage.iterations`, which the
 * top-level counts leave out; their cache writes at the 5-minute price), all times `rateMultiplier`;
 * plus web searches, web fetches and code executions at their per-request prices (not multiplied).
 */
export function priceUsage(model: ModelConfig, usage: Usage): number {
  const p = resolvePricing(model.pricing);
  const oneHourWrites = Math.min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens);
  const tokens = priceTokens(p, usage, oneHourWrites) + priceTokens(p, usage.compaction, 0);
  return tokens * rateMultiplier(model, usage) +
    usage.web_search_requests * p.webSearch + usage.web_fetch_requests * p.webFetch + usage.code_execution_requests * p.codeExecution;
}

/**
 * What of a reply's usage the catalogue cannot price: each unknown usage field (`usage.<name>`), and
 * a fast-mode reply on a model with no `fastModeMultiplier` (billed at the standard rate). Names are
 * stable, so a caller can log each once.
 */
export function unpricedUsage(model: ModelConfig, usage: Usage): string[] {
  const names = usage.unknown_fields.map((field) => `usage.${field}`);
  if (usage.speed !== null && usage.speed !== 'standard' && (usage.speed !== 'fast' || model.pricing.fastModeMultiplier === undefined)) {
    names.push(`usage.speed=${usage.speed} on ${model.id}`);
  }
  return names;
}
