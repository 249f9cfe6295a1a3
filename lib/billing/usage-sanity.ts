/**
 * Usage sanity: the usage an upstream reports is checked before the store changes anything. A figure
 * no reply can carry (not a non-negative integer, or past what the model can read or write) is an
 * upstream fault or an attack on the ledger: the settlement logs it and bills the request at its hold
 * (the worst case the gateway held for it), so it is never dropped, never unbilled, and never a charge
 * that blocks the key for the month.
 */
import type { ModelConfig } from '../config';
import type { Usage } from '../../translators/usage';
import { contextWindowOf } from './input-bound';

const COUNTS = [
  'input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'cache_creation_1h_input_tokens',
  'web_search_requests', 'web_fetch_requests', 'code_execution_requests',
] as const;
const COMPACTION_COUNTS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;

const isCount = (value: number) => Number.isSafeInteger(value) && value >= 0;

/**
 * Why `usage` cannot be a reply of `model`, or null when it can. The bounds:
 * - every count (tokens, server-tool requests, compaction tokens) is a non-negative integer;
 * - each server-tool request is written by the model, so there are no more of them than output tokens;
 * - each server-tool request starts one more sampling step, whose input (fresh, cache writes and
 *   cache reads) is at most the context window (the widest a request may ask for, the 1M window beta
 *   included: the check must never refuse a real reply): input <= window x (1 + server-tool requests),
 *   and the same for the compaction steps' tokens;
 * - output tokens <= the model's output ceiling (`capabilities.maxOutputTokens`; else its context window).
 */
export function findImpossibleUsage(model: ModelConfig, usage: Usage): string | null {
  for (const field of COUNTS) if (!isCount(usage[field])) return `usage.${field} ${usage[field]} is not a non-negative integer`;
  for (const field of COMPACTION_COUNTS) {
    if (!isCount(usage.compaction[field])) return `usage.iterations ${field} ${usage.compaction[field]} is not a non-negative integer`;
  }
  const window = contextWindowOf(model, true);
  const toolRequests = usage.web_search_requests + usage.web_fetch_requests + usage.code_execution_requests;
  if (toolRequests > usage.output_tokens + usage.compaction.output_tokens) {
    return `${toolRequests} server-tool requests in ${usage.output_tokens} output tokens`;
  }
  const inputBound = window * (1 + toolRequests);
  const input = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  if (input > inputBound) return `${input} input tokens past ${inputBound} (context window ${window} x ${1 + toolRequests} sampling steps)`;
  const compaction = usage.compaction.input_tokens + usage.compaction.cache_creation_input_tokens + usage.compaction.cache_read_input_tokens;
  if (compaction > inputBound) return `${compaction} compaction input tokens past ${inputBound}`;
  const outputBound = model.capabilities?.maxOutputTokens ?? window;
  if (usage.output_tokens > outputBound) return `usage.output_tokens ${usage.output_tokens} past the output ceiling ${outputBound}`;
  if (usage.compaction.output_tokens > outputBound) return `compaction output tokens ${usage.compaction.output_tokens} past ${outputBound}`;
  return null;
}
