/**
 * Usage: reading it from native replies and streams, and mapping it to the chat-completions shape.
 * Source: wire-formats.md §2.2 (native usage), §3 "Usage split", §8.5 (mapping).
 */
import type { Usage } from '../lib/context';
import type { NativeUsage } from './native-types';

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;

/**
 * Merge a usage object from the upstream into `target`: each numeric field present overwrites,
 * never adds (the stream's `message_delta.usage` is cumulative). Returns `target`.
 */
export function mergeNativeUsage(target: Usage, reported: NativeUsage | null | undefined): Usage {
  if (!reported || typeof reported !== 'object') return target;
  for (const field of USAGE_FIELDS) {
    const value = reported[field];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) target[field] = value;
  }
  return target;
}

/** Chat-completions `usage` object (OpenAI semantics: cached tokens are a subset of prompt tokens). */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/**
 * Map native usage to chat usage: prompt = input + cache writes + cache reads; cached = cache reads;
 * completion = output (wire-formats.md §8.5).
 */
export function convertUsageToChat(usage: Usage): ChatUsage {
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.output_tokens,
    total_tokens: prompt + usage.output_tokens,
    prompt_tokens_details: { cached_tokens: usage.cache_read_input_tokens },
  };
}
