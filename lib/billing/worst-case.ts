/**
 * A request's worst case in credits, what the credit reservation step holds against the key's cap
 * (see middleware/credit-reservation.ts for how it is used):
 *
 * worst case = (input bound x the model's highest input price + max_tokens x the output price) x rate
 *            + server tool bound: web searches, web fetches and code executions x their per-request prices
 *            (+ the same token bound again when the request asks for server-side compaction: the
 *              compaction step reads the conversation and writes its summary before the reply), where
 * input bound = lib/billing/input-bound.ts: what the gateway sends (the body as received, a stored
 *             conversation it continues, signed thinking it restores, image parts) and what the
 *             upstream adds (files by their stored size, documents fetched from URLs and server-tool
 *             results by the model's context window per sampling step they can cause),
 * max_tokens counts once per choice a chat request asks for (`n`),
 * rate = the fast-mode multiplier when the body asks `speed: "fast"` x 1.1 when it pins `inference_geo`
 *        (lib/billing/pricing.ts), and server tool bound = for each web search, web fetch or code
 *        execution server tool offered (`tools[].type` `web_search_*`, `web_fetch_*`, `code_execution_*`),
 *        its `max_uses`, else reservation.webSearchesPerRequest (boundServerToolRequests).
 * A Message Batches request (`batchWorstCase`) takes the same input bound, at the batch rate. Where
 * the byte bound refuses a native request, its input measured by count_tokens may replace it
 * (middleware/measured-input.ts).
 * The body's other fields are not read, so any shape the upstream accepts can be reserved for.
 */
import type { Request } from 'express';
import type { Catalogue } from '../config/catalogue';
import type { GatewayConfig, ModelConfig } from '../config';
import { PUBLISHED_RATIOS, rateMultiplier, resolvePricing } from './pricing';
import {
  boundInput, contextWindowOf, countServerToolRequests, describeInputBound, serverToolSteps, type FileFacts, type InputBound, type ServerToolRequests,
} from './input-bound';

export { IMAGE_INPUT_TOKENS } from './input-bound';

/** The body formats whose output bound the credit step reads. */
export type CreditReservationFormat = 'native' | 'chat' | 'responses';

/** Input tokens a request can be billed for, at most (see the module comment). */
export function boundInputTokens(bodyBytes: number, reservation: GatewayConfig['reservation']): number {
  return Math.ceil(bodyBytes / reservation.bytesPerInputToken) + reservation.overheadInputTokens;
}

/** The choices a request asks for: chat `n` (validated as an integer of at most MAX_CHOICES), else 1. */
export function choicesOf(req: Request, format: CreditReservationFormat): number {
  const n = (req.body as { n?: unknown } | null)?.n;
  return format === 'chat' && typeof n === 'number' && Number.isInteger(n) && n > 1 ? n : 1;
}

/**
 * The server tool requests a request can be billed for at a per-request price, at most: for each web
 * search, web fetch or code execution server tool offered (`tools[].type` `web_search_*`, `web_fetch_*`,
 * `code_execution_*`), its `max_uses`, else reservation.webSearchesPerRequest (the same uses the input
 * bound counts as sampling steps: `serverToolSteps`).
 */
export function boundServerToolRequests(body: unknown, reservation: GatewayConfig['reservation']): ServerToolRequests {
  return countServerToolRequests(serverToolSteps(body, reservation.webSearchesPerRequest));
}

/** The model's highest price of an input token (plain, cache writes of either lifetime, cache read), credits per million. */
function highestInputPrice(model: ModelConfig): number {
  const p = resolvePricing(model.pricing);
  return Math.max(p.input, p.cacheWrite5m, p.cacheWrite1h, p.cacheRead);
}

/**
 * Credits of `inputTokens` input, `outputTokens` output and `tools` server tool requests (web searches,
 * web fetches, code executions at the model's per-request prices) at a model's prices, input at its
 * highest price, tokens times `rate` (1: the standard rate).
 */
export function priceWorstCase(model: ModelConfig, inputTokens: number, outputTokens: number, tools?: ServerToolRequests, rate = 1): number {
  const p = resolvePricing(model.pricing);
  const perRequest = tools ? tools.webSearch * p.webSearch + tools.webFetch * p.webFetch + tools.codeExecution * p.codeExecution : 0;
  return (inputTokens * highestInputPrice(model) + outputTokens * p.output) / 1_000_000 * rate + perRequest;
}

/**
 * The 402's words for a worst case's parts that refused: the input bound part by part
 * (describeInputBound) and, when the model prices them, the server tool requests it may cause:
 * `...; up to 0.5 credits for server tool requests (5 web fetch(es) at 0.1)`.
 */
export function describeWorstCase(model: ModelConfig, bound: InputBound): string {
  const p = resolvePricing(model.pricing);
  const tools = countServerToolRequests(bound.toolSteps);
  const parts: string[] = [];
  let credits = 0;
  for (const [count, price, name] of [[tools.webSearch, p.webSearch, 'web search(es)'], [tools.webFetch, p.webFetch, 'web fetch(es)'], [tools.codeExecution, p.codeExecution, 'code execution(s)']] as const) {
    if (count === 0 || price === 0) continue;
    credits += count * price;
    parts.push(`${count} ${name} at ${price}`);
  }
  const input = describeInputBound(bound);
  return parts.length === 0 ? input : `${input}; up to ${Math.round(credits * 1e6) / 1e6} credits for server tool requests (${parts.join(', ')})`;
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

/** The rate a request's body asks for: fast mode (`speed: "fast"`) and a pinned `inference_geo` (lib/billing/pricing.ts). */
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
 * The worst case of a request whose body is `body`, `inputTokens` its input bound (boundInput),
 * asking for `maxTokens` output tokens per choice and `choices` choices (each may reach `maxTokens`).
 */
export function estimateWorstCase(model: ModelConfig, body: unknown, inputTokens: number, maxTokens: number, reservation: GatewayConfig['reservation'],
  choices = 1): WorstCase {
  const rate = requestedRate(body, model);
  const passes = asksCompaction(body) ? 2 : 1;
  // An output token of the request's bound is one of each choice's.
  const perToken = priceWorstCase(model, 0, 1, undefined, rate) * choices;
  // The compaction step's summary is bounded like a reply (max_tokens); it is not cut with it.
  const fixed = priceWorstCase(model, inputTokens * passes, maxTokens * (passes - 1), boundServerToolRequests(body, reservation), rate);
  return { fixedCredits: fixed, creditsPerOutputToken: perToken, maxTokens };
}

/**
 * `worst` priced `multiplier` times (a target's `priceMultiplier`, the largest among those that may
 * serve the request); `worst` itself for 1.
 */
export function scaleWorstCase(worst: WorstCase, multiplier: number): WorstCase {
  if (multiplier === 1) return worst;
  return { fixedCredits: worst.fixedCredits * multiplier, creditsPerOutputToken: worst.creditsPerOutputToken * multiplier, maxTokens: worst.maxTokens };
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
 * on tokens, lib/billing/pricing.ts) and its input bound (boundInput, the bytes of `params` serialised; `files`:
 * what is known of the files it names; `wideWindow`: the create request asks for the 1M context window),
 * so a batch's 402 can say which part refused.
 */
export function batchWorstCase(model: ModelConfig, params: Record<string, unknown>, defaultMaxTokens: number, reservation: GatewayConfig['reservation'],
  files?: ReadonlyMap<string, FileFacts>, wideWindow = false): { credits: number; input: InputBound } {
  const given = params.max_tokens;
  const maxTokens = typeof given === 'number' && Number.isFinite(given) && given > 0 ? Math.ceil(given) : defaultMaxTokens;
  const passes = asksCompaction(params) ? 2 : 1;
  const contextWindow = contextWindowOf(model, wideWindow);
  const input = boundInput(params, { bytes: Buffer.byteLength(JSON.stringify(params)), reservation, contextWindow, files });
  const credits = priceWorstCase(model, input.tokens * passes, maxTokens * passes, countServerToolRequests(input.toolSteps), requestedRate(params, model) * PUBLISHED_RATIOS.batch);
  return { credits, input };
}
