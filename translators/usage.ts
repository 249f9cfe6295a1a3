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

/** Tokens of the server-side compaction steps of one reply (`usage.iterations` entries of type `compaction`). */
export interface CompactionTokenCounts {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/**
 * What the gateway bills of one reply: the native token counts, with the nested figures it prices
 * flattened (from `usage.cache_creation`, `usage.server_tool_use` and `usage.iterations`) and the
 * fields that change the rate (`speed`, `inference_geo`, `service_tier`). Source: wire-formats.md
 * §2.2 and the provider's pricing, fast mode, data residency and compaction pages (docs/spend.md).
 */
export interface Usage extends NativeTokenCounts {
  /** Of `cache_creation_input_tokens`, those written to the 1-hour cache (`cache_creation.ephemeral_1h_input_tokens`); the rest are 5-minute writes. */
  cache_creation_1h_input_tokens: number;
  /** Server-side web searches the upstream ran (`server_tool_use.web_search_requests`). */
  web_search_requests: number;
  /** Server-side web fetches (`server_tool_use.web_fetch_requests`). */
  web_fetch_requests: number;
  /** Server-side code executions (`server_tool_use.code_execution_requests`). */
  code_execution_requests: number;
  /** `usage.speed`: `fast` when the reply ran in fast mode; null when not reported. */
  speed: string | null;
  /** `usage.inference_geo`: where inference ran (`global`, `us`, ...); null when not reported. */
  inference_geo: string | null;
  /** `usage.service_tier`: `standard`, `priority` or `batch`; null when not reported. */
  service_tier: string | null;
  /**
   * Tokens of the server-side compaction steps (`usage.iterations` of type `compaction`): billed by
   * the upstream but not counted in the top-level figures.
   */
  compaction: CompactionTokenCounts;
  /** Usage fields (dotted paths) the gateway does not know how to price; logged once per name by the settlement. */
  unknown_fields: string[];
}

export function emptyUsage(): Usage {
  return {
    input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0,
    cache_creation_1h_input_tokens: 0, web_search_requests: 0, web_fetch_requests: 0, code_execution_requests: 0,
    speed: null, inference_geo: null, service_tier: null,
    compaction: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    unknown_fields: [],
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

/** The `usage` fields the gateway reads (wire-formats.md §2.2); any other is reported in `unknown_fields`. */
const KNOWN_USAGE_FIELDS = new Set([
  ...USAGE_FIELDS, 'cache_creation', 'server_tool_use', 'service_tier', 'inference_geo', 'speed', 'iterations',
  // The reasoning share of `output_tokens`: already billed within them.
  'output_tokens_details',
]);
const KNOWN_CACHE_CREATION_FIELDS = new Set(['ephemeral_5m_input_tokens', 'ephemeral_1h_input_tokens']);
const SERVER_TOOL_FIELDS = { web_search_requests: 'web_search_requests', web_fetch_requests: 'web_fetch_requests', code_execution_requests: 'code_execution_requests' } as const;

/** A string label as reported, else undefined (absent, null or not a string). */
function labelOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function noteUnknown(target: Usage, name: string): void {
  if (!target.unknown_fields.includes(name)) target.unknown_fields.push(name);
}

/**
 * The compaction steps' tokens from `usage.iterations` (entries `{type: 'compaction' | 'message', ...}`):
 * the top-level counts are those of the `message` iterations, so only `compaction` entries add to them.
 */
function sumCompaction(iterations: unknown): CompactionTokenCounts | undefined {
  if (!Array.isArray(iterations)) return undefined;
  const sum: CompactionTokenCounts = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  for (const entry of iterations) {
    if (!entry || typeof entry !== 'object' || (entry as { type?: unknown }).type !== 'compaction') continue;
    for (const field of USAGE_FIELDS) sum[field] += countOf((entry as Record<string, unknown>)[field]) ?? 0;
  }
  return sum;
}

/**
 * Merge a usage object from the upstream into `target`: each count present overwrites, never adds
 * (the stream's `message_delta.usage` is cumulative). `cache_creation` (the 5 m / 1 h split) sets the
 * 1-hour share, and the total when `cache_creation_input_tokens` is absent; `server_tool_use` sets
 * the server tool counts; `iterations` sets the compaction tokens; `speed`, `inference_geo` and
 * `service_tier` are kept as reported. A field not listed in wire-formats.md §2.2 (or a server tool
 * not known) is named in `unknown_fields`. Returns `target`.
 */
export function mergeNativeUsage(target: Usage, reported: NativeUsage | null | undefined): Usage {
  if (!reported || typeof reported !== 'object') return target;
  for (const field of USAGE_FIELDS) {
    const value = countOf(reported[field]);
    if (value !== undefined) target[field] = value;
  }
  for (const name of Object.keys(reported)) if (!KNOWN_USAGE_FIELDS.has(name)) noteUnknown(target, name);
  const split = reported.cache_creation;
  if (split && typeof split === 'object') {
    const fiveMinutes = countOf(split.ephemeral_5m_input_tokens);
    const oneHour = countOf(split.ephemeral_1h_input_tokens);
    if (oneHour !== undefined) target.cache_creation_1h_input_tokens = oneHour;
    if (countOf(reported.cache_creation_input_tokens) === undefined && (fiveMinutes !== undefined || oneHour !== undefined)) {
      target.cache_creation_input_tokens = (fiveMinutes ?? 0) + (oneHour ?? 0);
    }
    for (const name of Object.keys(split)) if (!KNOWN_CACHE_CREATION_FIELDS.has(name)) noteUnknown(target, `cache_creation.${name}`);
  }
  const tools = reported.server_tool_use;
  if (tools && typeof tools === 'object') {
    for (const [name, value] of Object.entries(tools)) {
      const field = SERVER_TOOL_FIELDS[name as keyof typeof SERVER_TOOL_FIELDS];
      if (!field) {
        // A count of 0 costs nothing whatever its price; only a tool that ran is worth a warning.
        if (countOf(value) !== 0) noteUnknown(target, `server_tool_use.${name}`);
        continue;
      }
      const count = countOf(value);
      if (count !== undefined) target[field] = count;
    }
  }
  const compaction = sumCompaction(reported.iterations);
  if (compaction) target.compaction = compaction;
  for (const field of ['speed', 'inference_geo', 'service_tier'] as const) {
    const label = labelOf(reported[field]);
    if (label !== undefined) target[field] = label;
  }
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
