/**
 * Reverse translation, request side: a native messages request becomes a chat-completions request, so
 * native-format tools can reach a key group whose upstream speaks chat-completions.
 * Source: wire-formats.md §1 (native request), §5 (chat request), §8.1-§8.2 read right to left.
 */
import type { ChatCompletionRequest, ChatContentPart, ChatMessage, ChatTool, ChatToolCall } from './chat-types';
import type { NativeContentBlock, NativeMessageParam, NativeMessagesRequest, NativeTool, NativeToolChoice } from './native-types';

export interface ReverseRequestOptions {
  /** The model name the chat-completions upstream knows. */
  upstreamModel: string;
}

export interface ReverseRequestResult {
  request: ChatCompletionRequest;
  /** Lossy conversions, for the `x-gateway-warning` header. */
  warnings: string[];
}

/** Native fields with no chat-completions equivalent: dropped, with a warning. */
const DROPPED_FIELDS = ['top_k', 'thinking', 'service_tier', 'container', 'output_config', 'cache_control', 'inference_geo'];

/**
 * Convert a validated native request.
 *
 * - `system` (string or text blocks) -> a leading `system` message;
 * - user `tool_result` blocks -> `tool` messages (placed before the user's other content, which the
 *   native tool-result-first rule already guarantees); other user blocks -> content parts (`text`,
 *   `image` -> `image_url` with a data: or https URL);
 * - assistant `tool_use` blocks -> `tool_calls` (`input` JSON-encoded as `arguments`);
 * - `max_tokens` -> `max_tokens`, `stop_sequences` -> `stop`, `metadata.user_id` -> `user`,
 *   `temperature` / `top_p` kept, `tools` -> function tools, `tool_choice` mapped (any -> required,
 *   tool -> named function, `disable_parallel_tool_use` -> `parallel_tool_calls: false`);
 * - `stream: true` also asks for the usage chunk (`stream_options.include_usage`), which billing needs.
 */
export function convertNativeRequestToChat(body: NativeMessagesRequest, options: ReverseRequestOptions): ReverseRequestResult {
  const warnings: string[] = [];
  const messages: ChatMessage[] = [];
  const system = systemText(body.system);
  if (system) messages.push({ role: 'system', content: system });
  for (const message of body.messages) messages.push(...convertMessage(message, warnings));

  const request: ChatCompletionRequest = { model: options.upstreamModel, messages, max_tokens: body.max_tokens };
  if (body.stream === true) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  if (typeof body.temperature === 'number') request.temperature = body.temperature;
  if (typeof body.top_p === 'number') request.top_p = body.top_p;
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > 0) request.stop = body.stop_sequences;
  if (typeof body.metadata?.user_id === 'string') request.user = body.metadata.user_id;
  if (Array.isArray(body.tools) && body.tools.length > 0) request.tools = body.tools.map((tool) => convertTool(tool as NativeTool));
  Object.assign(request, convertToolChoice(body.tool_choice));
  for (const field of DROPPED_FIELDS) {
    if (body[field] !== undefined) warnings.push(`${field} is not supported by this model family and was ignored`);
  }
  return { request, warnings };
}

function systemText(system: NativeMessagesRequest['system']): string {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return '';
  return system.filter((block) => block.type === 'text').map((block) => block.text).join('\n');
}

function convertMessage(message: NativeMessageParam, warnings: string[]): ChatMessage[] {
  if (message.role === 'system') return [{ role: 'system', content: systemText(message.content as NativeMessagesRequest['system']) }];
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }];
  if (message.role === 'assistant') return [convertAssistant(message.content, warnings)];

  const out: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  for (const block of message.content) {
    if (block.type === 'tool_result') {
      out.push({ role: 'tool', tool_call_id: String(block.tool_use_id), content: toolResultText(block.content) });
    } else {
      const part = convertUserBlock(block, warnings);
      if (part) parts.push(part);
    }
  }
  if (parts.length > 0) {
    const onlyText = parts.every((part) => part.type === 'text');
    out.push({ role: 'user', content: onlyText ? parts.map((part) => (part as { text: string }).text).join('\n') : parts });
  }
  return out;
}

function convertAssistant(blocks: NativeContentBlock[], warnings: string[]): ChatMessage {
  const text: string[] = [];
  const toolCalls: ChatToolCall[] = [];
  for (const block of blocks) {
    if (block.type === 'text') text.push(String(block.text));
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: String(block.id), type: 'function', function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) } });
    } else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      warnings.push(`assistant content block "${block.type}" has no chat-completions equivalent and was dropped`);
    }
  }
  const message: ChatMessage = { role: 'assistant', content: text.length > 0 ? text.join('') : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return message;
}

function convertUserBlock(block: NativeContentBlock, warnings: string[]): ChatContentPart | undefined {
  if (block.type === 'text') return { type: 'text', text: String(block.text) };
  if (block.type === 'image') {
    const source = block.source as { type?: string; media_type?: string; data?: string; url?: string } | undefined;
    if (source?.type === 'base64') return { type: 'image_url', image_url: { url: `data:${source.media_type};base64,${source.data}` } };
    if (source?.type === 'url') return { type: 'image_url', image_url: { url: source.url } };
  }
  warnings.push(`user content block "${block.type}" has no chat-completions equivalent and was dropped`);
  return undefined;
}

/** A tool result's content as text (chat `tool` messages carry text). */
function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((part) => part?.type === 'text').map((part) => String(part.text)).join('\n');
}

function convertTool(tool: NativeTool): ChatTool {
  const fn: NonNullable<ChatTool['function']> = { name: tool.name, parameters: tool.input_schema ?? { type: 'object', properties: {} } };
  if (tool.description !== undefined) fn.description = tool.description;
  return { type: 'function', function: fn };
}

function convertToolChoice(choice: NativeToolChoice | undefined): Pick<ChatCompletionRequest, 'tool_choice' | 'parallel_tool_calls'> {
  const c = choice as { type?: string; name?: string; disable_parallel_tool_use?: boolean } | undefined;
  if (!c || typeof c !== 'object') return {};
  const out: Pick<ChatCompletionRequest, 'tool_choice' | 'parallel_tool_calls'> = {};
  if (c.type === 'auto') out.tool_choice = 'auto';
  else if (c.type === 'any') out.tool_choice = 'required';
  else if (c.type === 'none') out.tool_choice = 'none';
  else if (c.type === 'tool') out.tool_choice = { type: 'function', function: { name: String(c.name) } };
  if (c.disable_parallel_tool_use === true && c.type !== 'none') out.parallel_tool_calls = false;
  return out;
}
