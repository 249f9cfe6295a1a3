/**
 * A request's worst case in credits, what the credit reservation step holds against the key's cap
 * (see middleware/credit-reservation.ts for how it is used):
 *
 * worst case = (input bound x the model's highest input price + max_tokens x the output price) x rate
 *            + web search bound x the price of a web search
 *            (+ the same token bound again when the request asks for server-side compaction: the
 *              compaction step reads the conversation and writes its summary before the reply), where
 * input bound = ceil(bytes sent / reservation.bytesPerInputToken) + reservation.overheadInputTokens
 *             + IMAGE_INPUT_TOKENS per image part (bytes sent: the body as received plus a stored
 *             conversation it continues),
 * max_tokens counts once per choice a chat request asks for (`n`),
 * rate = the fast-mode multiplier when the body asks `speed: "fast"` x 1.1 when it pins `inference_geo`
 *        (lib/pricing.ts), and web search bound = for each web search server tool offered
 *        (`tools[].type` `web_search_*`), its `max_uses`, else reservation.webSearchesPerRequest.
 * The body's other fields are not read, so any shape the upstream accepts can be reserved for.
 */
import type { Request } from 'express';
import type { Catalogue } from '../lib/catalogue';
import type { GatewayConfig, ModelConfig } from '../lib/config';
import { PUBLISHED_RATIOS, rateMultiplier, resolvePricing } from '../lib/pricing';

/** The body formats whose output bound the credit step reads. */
export type CreditReservationFormat = 'native' | 'chat' | 'responses';

/** Input tokens a request can be billed for, at most (see the module comment). */
export function boundInputTokens(bodyBytes: number, reservation: GatewayConfig['reservation']): number {
  return Math.ceil(bodyBytes / reservation.bytesPerInputToken) + reservation.overheadInputTokens;
}

/**
 * Input tokens held per image part: an image whose URL is a few bytes of JSON is billed for its pixels.
 * The native API resizes images past about 1.15 megapixels, so one costs at most about 1600 tokens
 * (tokens = width x height / 750; https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs).
 */
export const IMAGE_INPUT_TOKENS = 1600;

/** Part types that carry an image: chat `image_url`, Responses `input_image`, native `image`. */
const IMAGE_PART_TYPES = new Set(['image_url', 'input_image', 'image']);

/**
 * Image parts in a request's conversation (messages or input items, their content, and the content of
 * tool results inside them), looked for at most `depth` levels down.
 */
export function countImageParts(value: unknown, depth = 7): number {
  if (depth < 0 || value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let count = 0;
    for (const item of value) count += countImageParts(item, depth - 1);
    return count;
  }
  const record = value as { type?: unknown; content?: unknown; messages?: unknown; input?: unknown; output?: unknown };
  if (typeof record.type === 'string' && IMAGE_PART_TYPES.has(record.type)) return 1;
  return countImageParts(record.messages, depth - 1) + countImageParts(record.input, depth - 1)
    + countImageParts(record.content, depth - 1) + countImageParts(record.output, depth - 1);
}

/** The choices a request asks for: chat `n` (validated as an integer of at most MAX_CHOICES), else 1. */
export function choicesOf(req: Request, format: CreditReservationFormat): number {
  const n = (req.body as { n?: unknown } | null)?.n;
  return format === 'chat' && typeof n === 'number' && Number.isInteger(n) && n > 1 ? n : 1;
}

/** Web searches a request can be billed for, at most (see the module comment); 0 when it offers no web search tool. */
export function boundWebSearches(body: unknown, reservation: GatewayConfig['reservation']): number {
  const tools = (body as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return 0;
  let searches = 0;
  for (const tool of tools) {
    if (typeof tool?.type !== 'string' || !tool.type.startsWith('web_search')) continue;
    const maxUses = tool.max_uses;
    searches += Number.isInteger(maxUses) && maxUses >= 0 ? maxUses : reservation.webSearchesPerRequest;
  }
  return searches;
}

/** The model's highest price of an input token (plain, cache writes of either lifetime, cache read), credits per million. */
function highestInputPrice(model: ModelConfig): number {
  const p = resolvePricing(model.pricing);
  return Math.max(p.input, p.cacheWrite5m, p.cacheWrite1h, p.cacheRead);
}

/**
 * Credits of `inputTokens` input, `outputTokens` output and `webSearches` server-side searches at a
 * model's prices, input at its highest price, tokens times `rate` (1: the standard rate).
 */
export function priceWorstCase(model: ModelConfig, inputTokens: number, outputTokens: number, webSearches = 0, rate = 1): number {
  const p = resolvePricing(model.pricing);
  return (inputTokens * highestInputPrice(model) + outputTokens * p.output) / 1_000_000 * rate + webSearches * p.webSearch;
}

/**
 * The output tokens a request may produce: native `max_tokens`; chat `max_completion_tokens`,
 * `max_tokens`; Responses `max_output_tokens`; else the model default.
 */
export function maxOutputTokens(req: Request, format: CreditReservationFormat, model: ModelConfig, catalogue: Catalogue): number {
  const body = req.body as { max_tokens?: unknown; max_completion_tokens?: unknown; max_output_tokens?: unknown };
  const given = format === 'chat' ? body.max_completion_tokens ?? body.max_tokens
    : format === 'responses' ? body.max_output_tokens
      : body.max_tokens;
  return typeof given === 'number' && Number.isFinite(given) && given > 0 ? Math.ceil(given) : catalogue.defaultMaxTokens(model);
}

/** The rate a request's body asks for: fast mode (`speed: "fast"`) and a pinned `inference_geo` (lib/pricing.ts). */
export function requestedRate(body: unknown, model: ModelConfig): number {
  const asked = body as { speed?: unknown; inference_geo?: unknown } | null;
  return rateMultiplier(model, {
    speed: typeof asked?.speed === 'string' ? asked.speed : null,
    inference_geo: typeof asked?.inference_geo === 'string' ? asked.inference_geo : null,
    service_tier: null,
  });
}

/** Whether a native body asks for server-side compaction (`context_management.edits[].type` `compact_*`). */
export function asksCompaction(body: unknown): boolean {
  const edits = (body as { context_management?: { edits?: unknown } } | null)?.context_management?.edits;
  return Array.isArray(edits) && edits.some((edit) => typeof edit?.type === 'string' && edit.type.startsWith('compact'));
}

/**
 * A request's worst case split so that its output can be cut to fit: `fixedCredits` (input, web
 * searches, compaction: what no `max_tokens` changes) + `maxTokens` x `creditsPerOutputToken`
 * (`maxTokens` per choice; the price of one token in every choice).
 */
export interface WorstCase {
  fixedCredits: number;
  creditsPerOutputToken: number;
  maxTokens: number;
}

/**
 * The worst case of a request whose body is `body` (`bodyBytes` sent) asking for `maxTokens` output
 * tokens per choice; `extra.imageParts` image parts (IMAGE_INPUT_TOKENS each) and `extra.choices`
 * choices (each may reach `maxTokens`). Default: none, one.
 */
export function estimateWorstCase(model: ModelConfig, body: unknown, bodyBytes: number, maxTokens: number, reservation: GatewayConfig['reservation'],
  extra: { imageParts?: number; choices?: number } = {}): WorstCase {
  const rate = requestedRate(body, model);
  const passes = asksCompaction(body) ? 2 : 1;
  const input = boundInputTokens(bodyBytes, reservation) + (extra.imageParts ?? 0) * IMAGE_INPUT_TOKENS;
  // An output token of the request's bound is one of each choice's.
  const perToken = priceWorstCase(model, 0, 1, 0, rate) * (extra.choices ?? 1);
  // The compaction step's summary is bounded like a reply (max_tokens); it is not cut with it.
  const fixed = priceWorstCase(model, input * passes, maxTokens * (passes - 1), boundWebSearches(body, reservation), rate);
  return { fixedCredits: fixed, creditsPerOutputToken: perToken, maxTokens };
}

/** Credits of a worst case with `outputTokens` output tokens. */
export function worstCaseCredits(worst: WorstCase, outputTokens = worst.maxTokens): number {
  return worst.fixedCredits + outputTokens * worst.creditsPerOutputToken;
}

/**
 * The most output tokens (at most `worst.maxTokens`) whose worst case fits in `credits`; 0 when not even
 * the fixed part fits.
 */
export function fitOutputTokens(worst: WorstCase, credits: number): number {
  const left = credits - worst.fixedCredits;
  if (left <= 0) return 0;
  // A hair under the exact quotient: a float rounding up must not make the reply cost more than the hold.
  const tokens = Math.floor((left / worst.creditsPerOutputToken) * (1 - 1e-12));
  return Math.min(worst.maxTokens, Math.max(0, tokens));
}

/**
 * The worst case of one Message Batches request (`params`: a Messages body) at the batch rate (0.5x
 * on tokens, lib/pricing.ts); its input bound from the size of `params` serialised.
 */
export function batchWorstCase(model: ModelConfig, params: Record<string, unknown>, defaultMaxTokens: number, reservation: GatewayConfig['reservation']): number {
  const given = params.max_tokens;
  const maxTokens = typeof given === 'number' && Number.isFinite(given) && given > 0 ? Math.ceil(given) : defaultMaxTokens;
  const passes = asksCompaction(params) ? 2 : 1;
  const input = boundInputTokens(Buffer.byteLength(JSON.stringify(params)), reservation);
  return priceWorstCase(model, input * passes, maxTokens * passes, boundWebSearches(params, reservation), requestedRate(params, model) * PUBLISHED_RATIOS.batch);
}
