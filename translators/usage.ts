/**
 * Usage: reading it from native replies and streams, and mapping it to the chat-completions shape.
 * Source: wire-formats.md §2.2 (native usage), §3 "Usage split", §8.5 (mapping).
 */
import type { NativeUsage } from './native-types';

/** The token counts a native reply carries in `usage` (wire-formats.md §2.2). */
export interface NativeTokenCounts {
  input_tokens: number;
  output_tokens: number;
  /** Tokens written to the prompt cache, both lifetimes. */
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/**
 * What the gateway bills of one reply: the native token counts, with the two nested figures it prices
 * flattened (from `usage.cache_creation` and `usage.server_tool_use`).
 */
export interface Usage extends NativeTokenCounts {
  /** Of `cache_creation_input_tokens`, those written to the 1-hour cache (`cache_creation.ephemeral_1h_input_tokens`); the rest are 5-minute writes. */
  cache_creation_1h_input_tokens: number;
  /** Server-side web searches the upstream ran (`server_tool_use.web_search_requests`). */
  web_search_requests: number;
}

export function emptyUsage(): Usage {
  return {
    input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
    cache_creation_1h_input_tokens: 0, web_search_requests: 0,
  };
}

/**
 * Characters of text per token assumed where no count is known yet (a stream cut before its final
 * usage, the simulated upstream): a rough average for English text.
 */
export const CHARACTERS_PER_TOKEN = 4;

/** Tokens of `characters` characters of generated text, rounded up (see CHARACTERS_PER_TOKEN). */
export function estimateTokens(characters: number): number {
  return Math.ceil(characters / CHARACTERS_PER_TOKEN);
}

/**
 * Characters of generated text a native `content_block_delta` event's data carries (text, tool input
 * JSON, thinking); 0 for other events and for data that is not a delta.
 */
export function countDeltaCharacters(data: unknown): number {
  const delta = (data as { delta?: Record<string, unknown> } | null)?.delta;
  if (!delta || typeof delta !== 'object') return 0;
  const text = delta.text ?? delta.partial_json ?? delta.thinking;
  return typeof text === 'string' ? text.length : 0;
}

/** The four native counts of `usage`, for a native reply the gateway writes itself. */
export function toNativeTokenCounts(usage: Usage): NativeTokenCounts {
  const { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens } = usage;
  return { input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens };
}

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;

/** A token count as reported: a finite number >= 0, else undefined (absent, null or malformed). */
function countOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/**
 * Merge a usage object from the upstream into `target`: each count present overwrites, never adds
 * (the stream's `message_delta.usage` is cumulative). `cache_creation` (the 5 m / 1 h split) sets the
 * 1-hour share, and the total when `cache_creation_input_tokens` is absent; `server_tool_use` sets
 * the web searches. Returns `target`.
 */
export function mergeNativeUsage(target: Usage, reported: NativeUsage | null | undefined): Usage {
  if (!reported || typeof reported !== 'object') return target;
  for (const field of USAGE_FIELDS) {
    const value = countOf(reported[field]);
    if (value !== undefined) target[field] = value;
  }
  const split = reported.cache_creation;
  if (split && typeof split === 'object') {
    const fiveMinutes = countOf(split.ephemeral_5m_input_tokens);
    const oneHour = countOf(split.ephemeral_1h_input_tokens);
    if (oneHour !== undefined) target.cache_creation_1h_input_tokens = oneHour;
    if (countOf(reported.cache_creation_input_tokens) === undefined && (fiveMinutes !== undefined || oneHour !== undefined)) {
      target.cache_creation_input_tokens = (fiveMinutes ?? 0) + (oneHour ?? 0);
    }
  }
  const searches = countOf(reported.server_tool_use?.web_search_requests);
  if (searches !== undefined) target.web_search_requests = searches;
  return target;
}

/** Chat-completions `usage` object (OpenAI semantics: cached tokens are a subset of prompt tokens). */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  /** Present when the upstream reports the thinking share of the output (`output_tokens_details.thinking_tokens`). */
  completion_tokens_details?: { reasoning_tokens: number };
}

/**
 * Map native usage to chat usage: prompt = input + cache writes + cache reads; cached = cache reads;
 * completion = output (wire-formats.md §8.5); reasoning = the upstream's thinking tokens when reported.
 */
export function convertUsageToChat(usage: Usage, thinkingTokens?: number): ChatUsage {
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  const chat: ChatUsage = {
    prompt_tokens: prompt,
    completion_tokens: usage.output_tokens,
    total_tokens: prompt + usage.output_tokens,
    prompt_tokens_details: { cached_tokens: usage.cache_read_input_tokens },
  };
  if (thinkingTokens !== undefined) chat.completion_tokens_details = { reasoning_tokens: thinkingTokens };
  return chat;
}

/** The thinking share of the output a native usage report gives (`output_tokens_details.thinking_tokens`), if any. */
export function readThinkingTokenCount(report: { output_tokens_details?: { thinking_tokens?: unknown } | null } | null | undefined): number | undefined {
  const count = report?.output_tokens_details?.thinking_tokens;
  return typeof count === 'number' && Number.isFinite(count) && count >= 0 ? count : undefined;
}
