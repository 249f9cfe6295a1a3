/**
 * Chat-completions `messages` -> native `system` + `messages`.
 * Source: wire-formats.md §8.2 (conversion algorithm), §1.2 (native blocks and ordering rules).
 *
 * Every function here is pure and throws a 400 GatewayError whose `param` names the message (and
 * part) at fault, so a client learns which element the native format cannot take.
 */
import { TranslationError } from './translation-error';
import type { ChatContentPart, ChatMessage, ChatToolCall } from './chat-types';
import type {
  NativeContentBlock,
  NativeDocumentBlock,
  NativeImageBlock,
  NativeMessageParam,
  NativeTextBlock,
  NativeToolResultBlock,
  NativeToolUseBlock,
} from './native-types';

export interface ConvertedMessages {
  /** Text of every system and developer message, in order (joined by the caller). */
  system: string[];
  /** Alternating user/assistant turns; tool results lead their user turn. */
  messages: NativeMessageParam[];
}

/** Image media types the native format takes inline (§1.2). */
const IMAGE_MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/**
 * Convert the chat `messages` array. System and developer messages, wherever they appear, are hoisted
 * into `system` in order (compatibility rule 1); `tool` messages become `tool_result` blocks in a user
 * turn; consecutive same-role turns are merged so the native alternation holds; messages left with no
 * content are dropped (the native format rejects empty turns).
 *
 * @throws GatewayError 400 for content the native format cannot take, invalid tool-call arguments,
 *   or a `function` message with no function call before it.
 */
export function convertChatMessages(chatMessages: ChatMessage[]): ConvertedMessages {
  const system: string[] = [];
  const messages: NativeMessageParam[] = [];
  // Deprecated `function_call` has no id: the `function` message after it answers the last one.
  let lastFunctionCallId: string | undefined;

  chatMessages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = convertTextOnlyContent(message.content, `messages[${index}]`);
        if (text) system.push(text);
        return;
      }
      case 'user':
        return appendTurn(messages, 'user', convertUserContent(message.content, `messages[${index}]`));
      case 'assistant': {
        // The signed thinking blocks the gateway replied go back first, byte for byte (§1.2).
        const blocks = [...convertThinkingBlocks(message.thinking_blocks), ...convertAssistantMessage(message, index)];
        if (message.function_call) lastFunctionCallId = functionCallId(index);
        return appendTurn(messages, 'assistant', blocks);
      }
      case 'tool':
        return appendTurn(messages, 'user', [convertToolMessage(message, index)]);
      case 'function': {
        if (!lastFunctionCallId) {
          throw new TranslationError(`messages[${index}]: a "function" message must follow an assistant function_call`, `messages[${index}]`);
        }
        return appendTurn(messages, 'user', [{ type: 'tool_result', ...toolResultContent(message.content, `messages[${index}]`), tool_use_id: lastFunctionCallId }]);
      }
      default:
        throw new TranslationError(`messages[${index}].role: "${message.role}" is not supported`, `messages[${index}].role`);
    }
  });
  return { system, messages };
}

/**
 * An assistant message's `thinking_blocks` (as the gateway replied them) as native blocks; anything
 * that is not a well-formed thinking or redacted_thinking block is left out (the upstream would
 * refuse it, and a turn without thinking is restored or continued without it).
 */
export function convertThinkingBlocks(blocks: unknown): NativeContentBlock[] {
  if (!Array.isArray(blocks)) return [];
  return blocks.flatMap((block): NativeContentBlock[] => {
    if (block?.type === 'thinking' && typeof block.thinking === 'string' && typeof block.signature === 'string') {
      return [{ type: 'thinking', thinking: block.thinking, signature: block.signature }];
    }
    if (block?.type === 'redacted_thinking' && typeof block.data === 'string') return [{ type: 'redacted_thinking', data: block.data }];
    return [];
  });
}

/** Text of a string or text-part content (system, developer); other parts are rejected. */
export function convertTextOnlyContent(content: ChatMessage['content'], path: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part, i) => textOfPart(part, `${path}.content[${i}]`)).join('');
}

function textOfPart(part: ChatContentPart, path: string): string {
  if (part.type === 'text' && typeof part.text === 'string') return part.text;
  throw unsupportedPart(part, path, 'only text parts are accepted in this message');
}

function unsupportedPart(part: ChatContentPart, path: string, accepted: string) {
  return new TranslationError(`${path}: content part of type "${part.type}" is not supported (${accepted})`, path);
}

/** User content: text, images (`image_url`) and PDF files (`file.file_data`); empty text is skipped. */
export function convertUserContent(content: ChatMessage['content'], path: string): NativeContentBlock[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  const blocks: NativeContentBlock[] = [];
  content.forEach((part, i) => {
    const partPath = `${path}.content[${i}]`;
    if (part.type === 'text') {
      const text = textOfPart(part, partPath);
      if (text) blocks.push({ type: 'text', text });
    } else if (part.type === 'image_url') {
      const url = (part as { image_url?: { url?: unknown } }).image_url?.url;
      if (typeof url !== 'string') throw new TranslationError(`${partPath}.image_url.url: field required`, `${partPath}.image_url.url`);
      blocks.push(convertImageUrl(url, partPath));
    } else if (part.type === 'file') {
      blocks.push(convertFilePart(part, partPath));
    } else {
      throw unsupportedPart(part, partPath, 'user messages take text, image_url and PDF file parts');
    }
  });
  return blocks;
}

/**
 * An `image_url` part: a `data:<mime>;base64,...` URL becomes a base64 image block (a PDF a document
 * block); an http(s) URL a url image block. `detail` has no native equivalent and is dropped.
 */
export function convertImageUrl(url: string, path: string): NativeImageBlock | NativeDocumentBlock {
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  const data = parseDataUrl(url);
  if (!data) {
    throw new TranslationError(`${path}: image_url.url must be an http(s) URL or a base64 data: URL`, path);
  }
  if (data.mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data.base64 } };
  if (!IMAGE_MEDIA_TYPES.has(data.mediaType)) {
    throw new TranslationError(`${path}: image type "${data.mediaType}" is not supported (use jpeg, png, gif or webp)`, path);
  }
  return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.base64 } };
}

/** A `file` part carrying a base64 PDF in `file_data` (a data: URL); file ids are not available upstream. */
function convertFilePart(part: ChatContentPart, path: string): NativeDocumentBlock {
  const fileData = (part as { file?: { file_data?: unknown } }).file?.file_data;
  const data = typeof fileData === 'string' ? parseDataUrl(fileData) : undefined;
  if (!data || data.mediaType !== 'application/pdf') {
    throw new TranslationError(`${path}: file parts are supported only as a base64 PDF in file.file_data`, path);
  }
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data.base64 } };
}

/** `data:<mime>[;params];base64,<data>` -> media type (lower case, `image/jpg` read as jpeg) and data. */
export function parseDataUrl(url: string): { mediaType: string; base64: string } | undefined {
  const match = /^data:([^;,]+)((?:;[^;,]*)*?);base64,/i.exec(url);
  if (!match) return undefined;
  let mediaType = match[1].trim().toLowerCase();
  if (mediaType === 'image/jpg') mediaType = 'image/jpeg';
  return { mediaType, base64: url.slice(match[0].length) };
}

/** Assistant text (refusal parts dropped), then each tool call as a `tool_use` block. */
function convertAssistantMessage(message: ChatMessage, index: number): NativeContentBlock[] {
  const blocks: NativeContentBlock[] = [];
  const { content } = message;
  if (typeof content === 'string') {
    if (content) blocks.push({ type: 'text', text: content });
  } else if (Array.isArray(content)) {
    content.forEach((part, i) => {
      if (part.type === 'refusal') return;
      const text = textOfPart(part, `messages[${index}].content[${i}]`);
      if (text) blocks.push({ type: 'text', text } satisfies NativeTextBlock);
    });
  }
  if (Array.isArray(message.tool_calls)) blocks.push(...convertToolCalls(message.tool_calls, index));
  if (message.function_call) {
    blocks.push({
      type: 'tool_use',
      id: functionCallId(index),
      name: message.function_call.name,
      input: parseToolArguments(message.function_call.arguments, `messages[${index}].function_call.arguments`),
    });
  }
  return blocks;
}

function functionCallId(index: number): string {
  return `call_function_${index}`;
}

/**
 * Assistant `tool_calls` -> `tool_use` blocks: the `arguments` JSON string becomes the `input` object.
 * @throws GatewayError 400 naming `messages[i].tool_calls[j].function.arguments` when it is not a JSON object.
 */
export function convertToolCalls(toolCalls: ChatToolCall[], messageIndex: number): NativeToolUseBlock[] {
  return toolCalls.map((call, j) => {
    const path = `messages[${messageIndex}].tool_calls[${j}]`;
    if (call.type !== undefined && call.type !== 'function') {
      throw new TranslationError(`${path}.type: only "function" tool calls are supported`, `${path}.type`);
    }
    return {
      type: 'tool_use',
      id: sanitizeToolId(call.id),
      name: call.function.name,
      input: parseToolArguments(call.function.arguments, `${path}.function.arguments`),
    };
  });
}

/** Parse tool-call arguments: `""` means no arguments; anything but a JSON object is a 400 naming `path`. */
export function parseToolArguments(text: string, path: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TranslationError(`${path}: not valid JSON`, path);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TranslationError(`${path}: must be a JSON object`, path);
  }
  return value as Record<string, unknown>;
}

/**
 * Native tool ids must match `^[a-zA-Z0-9_-]+$`; other characters become `_`. The same function runs
 * on `tool_use.id` and `tool_result.tool_use_id`, so a call and its result still match.
 */
export function sanitizeToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_') || '_';
}

/** A `tool` message -> a `tool_result` block (content omitted when the tool answered nothing). */
export function convertToolMessage(message: ChatMessage, index: number): NativeToolResultBlock {
  if (typeof message.tool_call_id !== 'string' || message.tool_call_id === '') {
    throw new TranslationError(`messages[${index}].tool_call_id: field required`, `messages[${index}].tool_call_id`);
  }
  return { type: 'tool_result', tool_use_id: sanitizeToolId(message.tool_call_id), ...toolResultContent(message.content, `messages[${index}]`) };
}

function toolResultContent(content: ChatMessage['content'], path: string): Pick<NativeToolResultBlock, 'content'> {
  if (typeof content === 'string') return content ? { content } : {};
  if (!Array.isArray(content)) return {};
  const blocks: NativeTextBlock[] = [];
  content.forEach((part, i) => {
    const text = textOfPart(part, `${path}.content[${i}]`);
    if (text) blocks.push({ type: 'text', text });
  });
  return blocks.length > 0 ? { content: blocks } : {};
}

/**
 * Append blocks as a turn, merging into the previous turn when the role repeats (native alternation).
 * `tool_result` blocks go after the turn's leading tool results and before anything else, because the
 * native format wants them first in their user turn (§1.2). An empty block list adds nothing.
 */
export function appendTurn(messages: NativeMessageParam[], role: 'user' | 'assistant', blocks: NativeContentBlock[]): void {
  if (blocks.length === 0) return;
  const last = messages[messages.length - 1];
  if (!last || last.role !== role || !Array.isArray(last.content)) {
    messages.push({ role, content: [...blocks] });
    return;
  }
  for (const block of blocks) {
    if (block.type === 'tool_result') {
      const at = last.content.findIndex((existing) => existing.type !== 'tool_result');
      last.content.splice(at === -1 ? last.content.length : at, 0, block);
    } else {
      last.content.push(block);
    }
  }
}
