/**
 * Reverse translation, reply side (non-streaming): a `chat.completion` becomes a native message.
 * Source: wire-formats.md §2 (native reply), §5 (chat.completion), §8.3 read right to left.
 */
import type { NativeTokenCounts } from './usage';
import { convertChatUsageToNative, mapFinishReasonToStopReason, type ReportedChatUsage } from './chat-to-native-mapping';

/** A `chat.completion` as an upstream sends it (fields the translation reads). */
export interface UpstreamChatCompletion {
  id?: string;
  model?: string;
  choices?: Array<{
    message?: { content?: string | null; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }> | null };
    finish_reason?: string | null;
  }>;
  usage?: ReportedChatUsage | null;
}

/** The native reply (wire-formats.md §2) with the gateway's usage record. */
export interface ReverseMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<{ type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: unknown }>;
  stop_reason: string;
  stop_sequence: null;
  usage: NativeTokenCounts;
}

/** A native message id for a chat completion id (`msg_` prefix, same characters). */
export function toMessageId(chatId: string | undefined): string {
  const base = (chatId ?? '').replace(/[^A-Za-z0-9_-]/g, '') || 'reverse';
  return base.startsWith('msg_') ? base : `msg_${base}`;
}

/**
 * Parse a tool call's `arguments` string into the object `tool_use.input` needs; an empty string is
 * `{}`, text that is not a JSON object is kept under `_raw` so nothing the model said is lost.
 */
export function parseToolArguments(text: string | undefined): unknown {
  if (!text) return {};
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : { _raw: text };
  } catch {
    return { _raw: text };
  }
}

/**
 * Convert the first choice of a chat completion. Text -> one text block (omitted when empty);
 * tool calls -> `tool_use` blocks; finish reason -> stop reason (§8.4); usage -> native usage.
 * @param options.model the canonical model ID the client asked for (named in the reply)
 */
export function convertChatCompletionToNative(completion: UpstreamChatCompletion, options: { model: string }): ReverseMessage {
  const choice = completion.choices?.[0];
  const content: ReverseMessage['content'] = [];
  const text = choice?.message?.content;
  if (typeof text === 'string' && text !== '') content.push({ type: 'text', text });
  for (const call of choice?.message?.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: call.id ?? `toolu_${content.length}`, name: call.function?.name ?? '', input: parseToolArguments(call.function?.arguments) });
  }
  return {
    id: toMessageId(completion.id),
    type: 'message',
    role: 'assistant',
    model: options.model,
    content,
    stop_reason: mapFinishReasonToStopReason(choice?.finish_reason),
    stop_sequence: null,
    usage: convertChatUsageToNative(completion.usage),
  };
}
