/**
 * Chat-completions request -> native messages request.
 * Source: wire-formats.md §8.1 (fields) and §8.2 (message conversion).
 */
import { errors } from '../lib/errors';
import type { ChatCompletionRequest, ChatContentPart, ChatMessage } from './chat-types';
import type { NativeContentBlock, NativeMessageParam, NativeMessagesRequest } from './native-types';

export interface ConvertChatRequestOptions {
  /** Model name to send upstream (already resolved from the catalogue). */
  upstreamModel: string;
  /** `max_tokens` to use when the request gives neither `max_completion_tokens` nor `max_tokens`. */
  defaultMaxTokens: number;
}

export interface ConvertedChatRequest {
  request: NativeMessagesRequest;
  /** Lossy conversions the client should hear about (sent in the `x-gateway-warning` header). */
  warnings: string[];
}

/**
 * Convert a validated chat-completions request to a native request.
 *
 * @throws GatewayError 400 (`invalid_request_error`, `param` naming the field) for content the native
 *   format cannot take.
 */
export function convertChatRequest(body: ChatCompletionRequest, options: ConvertChatRequestOptions): ConvertedChatRequest {
  const warnings: string[] = [];
  const system: string[] = [];
  const messages: NativeMessageParam[] = [];

  body.messages.forEach((message, index) => {
    if (message.role === 'system' || message.role === 'developer') {
      const text = convertTextContent(message, index);
      if (text) system.push(text);
      return;
    }
    if (message.role !== 'user' && message.role !== 'assistant') {
      throw errors.invalidRequest(`messages[${index}].role: "${message.role}" is not supported`, `messages[${index}].role`);
    }
    const text = convertTextContent(message, index);
    if (!text) return;
    appendTurn(messages, message.role, [{ type: 'text', text }]);
  });

  const request: NativeMessagesRequest = {
    model: options.upstreamModel,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? options.defaultMaxTokens,
    messages,
  };
  if (system.length > 0) request.system = system.join('\n');
  if (body.stream === true) request.stream = true;
  return { request, warnings };
}

/** Text of a message whose content is a string or text parts. */
function convertTextContent(message: ChatMessage, index: number): string {
  const { content } = message;
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part: ChatContentPart, partIndex) => {
      if (part.type === 'text' && typeof part.text === 'string') return part.text;
      throw errors.invalidRequest(
        `messages[${index}].content[${partIndex}]: content part of type "${part.type}" is not supported here`,
        `messages[${index}].content[${partIndex}]`,
      );
    })
    .join('');
}

/** Append blocks as a turn, merging into the previous turn when the role repeats (native alternation). */
function appendTurn(messages: NativeMessageParam[], role: 'user' | 'assistant', blocks: NativeContentBlock[]): void {
  const last = messages[messages.length - 1];
  if (last && last.role === role && Array.isArray(last.content)) {
    last.content.push(...blocks);
  } else {
    messages.push({ role, content: blocks });
  }
}
