/**
 * Native reply -> chat-completions reply (`chat.completion`).
 * Source: wire-formats.md §8.3.
 */
import { emptyUsage } from './usage';
import type { ChatCompletion, ChatThinkingBlock, ChatToolCall } from './chat-types';
import type { NativeMessage } from './native-types';
import { mapStopReason } from './stop-reason';
import { convertUsageToChat, mergeNativeUsage, readThinkingTokenCount } from './usage';

export interface ConvertNativeResponseOptions {
  /** Canonical model ID to report in `model`. */
  model: string;
  /** `created`, unix seconds. */
  created: number;
  onUnknownStopReason?: (value: string) => void;
}

/**
 * Convert a native message to a `chat.completion`: text blocks joined into `content` (null when the
 * reply has no text block), `tool_use` blocks to `tool_calls` in order (`input` -> `arguments` JSON
 * string), thinking blocks to `reasoning_content` (their text) and `thinking_blocks` (signed, to be sent
 * back), other blocks dropped; `stop_reason` -> `finish_reason`; usage per §8.5.
 */
export function convertNativeResponse(message: NativeMessage, options: ConvertNativeResponseOptions): ChatCompletion {
  let text = '';
  let hasText = false;
  const toolCalls: ChatToolCall[] = [];
  const thinking = collectThinkingBlocks(message.content ?? []);
  for (const block of message.content ?? []) {
    if (block.type === 'text' && typeof block.text === 'string') {
      text += block.text;
      hasText = true;
    } else if (block.type === 'tool_use') {
      toolCalls.push({
        id: String(block.id),
        type: 'function',
        function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  const completion: ChatCompletion = {
    id: toChatId(message.id),
    object: 'chat.completion',
    created: options.created,
    model: options.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: hasText ? text : null, refusal: null },
        logprobs: null,
        finish_reason: mapStopReason(message.stop_reason, options.onUnknownStopReason),
      },
    ],
    usage: convertUsageToChat(mergeNativeUsage(emptyUsage(), message.usage), readThinkingTokenCount(message.usage)),
  };
  if (toolCalls.length > 0) completion.choices[0].message.tool_calls = toolCalls;
  if (thinking.length > 0) {
    completion.choices[0].message.reasoning_content = thinking.map((b) => (b.type === 'thinking' ? b.thinking : '')).join('');
    completion.choices[0].message.thinking_blocks = thinking;
  }
  return completion;
}

/** The thinking and redacted_thinking blocks of a native reply, as they must be sent back. */
export function collectThinkingBlocks(content: ReadonlyArray<{ type: string }>): ChatThinkingBlock[] {
  const blocks: ChatThinkingBlock[] = [];
  for (const block of content as ReadonlyArray<{ type: string; [field: string]: unknown }>) {
    if (block.type === 'thinking' && typeof block.thinking === 'string' && typeof block.signature === 'string') {
      blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') blocks.push({ type: 'redacted_thinking', data: block.data });
  }
  return blocks;
}

/** Chat completion id for a native message id: `chatcmpl-` + the native id. */
export function toChatId(messageId: string | undefined): string {
  return `chatcmpl-${messageId ?? 'unknown'}`;
}
