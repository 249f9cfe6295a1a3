/**
 * Responses `input` (a string, or items) -> native system text and turns.
 * Sources: openai-node `responses.ts` (ResponseInputItem, ResponseInputContent, EasyInputMessage);
 * wire-formats.md §1.2 (native roles and blocks).
 *
 * - `message` items: `system` / `developer` -> the system text (in order, after `instructions`);
 *   `user` / `assistant` -> turns; parts `input_text` / `output_text` -> text, `refusal` -> text,
 *   `input_image` (URL or data URL) -> image, `input_file` (a PDF as data URL, base64 or URL) -> document.
 * - `function_call` / `custom_tool_call` -> assistant `tool_use` (its id is the `call_id`).
 * - `function_call_output` / `custom_tool_call_output` -> `tool_result` in the next user turn.
 * - `local_shell_call` -> assistant `tool_use` of the `local_shell` stand-in (responses-tools.ts);
 *   `local_shell_call_output` -> `tool_result`.
 * - `reasoning` -> the `thinking` / `redacted_thinking` block its `encrypted_content` carries; without
 *   one the item is left out (a warning): native thinking cannot be rebuilt from a summary.
 * - `web_search_call` -> left out (its results were the upstream's own; a warning).
 * Consecutive items of one role are merged into one turn, so the outputs of parallel calls form one
 * user turn and reasoning, text and calls of one reply one assistant turn.
 *
 * @throws TranslationError (param names the item) for unknown item or part types, parts the
 *   native format cannot take, and items missing what they need.
 */
import { decodeReasoning } from './responses-reasoning';
import { nativeToolName } from './responses-tools';
import {
  TranslationError,
  type ResponsesInputContent, type ResponsesInputItem,
} from './responses-types';
import type { NativeContentBlock, NativeMessageParam } from './native-types';

export interface ConvertedInput {
  system: string[];
  /** Turns as built here: content always blocks. */
  messages: Array<NativeMessageParam & { content: NativeContentBlock[] }>;
  warnings: string[];
}

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** One content part -> a native block. */
export function convertContentPart(part: ResponsesInputContent, param: string): NativeContentBlock {
  if (!part || typeof part !== 'object') throw new TranslationError(`${param}: must be an object with a type`, param);
  switch (part.type) {
    case 'input_text':
    case 'output_text':
    case 'text':
      if (typeof part.text !== 'string') throw new TranslationError(`${param}.text: must be a string`, `${param}.text`);
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: String(part.refusal ?? '') };
    case 'input_image': {
      const url = part.image_url;
      if (typeof url !== 'string' || url === '') {
        throw new TranslationError(`${param}.image_url: an image URL or data URL is required (file_id is not supported by this gateway)`, `${param}.image_url`);
      }
      const data = DATA_URL.exec(url);
      if (data) return { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } };
      if (!/^https?:\/\//.test(url)) throw new TranslationError(`${param}.image_url: must be an http(s) URL or a base64 data URL`, `${param}.image_url`);
      return { type: 'image', source: { type: 'url', url } };
    }
    case 'input_file': {
      if (typeof part.file_url === 'string' && part.file_url !== '') return { type: 'document', source: { type: 'url', url: part.file_url } };
      const fileData = part.file_data;
      if (typeof fileData !== 'string' || fileData === '') {
        throw new TranslationError(`${param}.file_data: a PDF as a data URL (or file_url) is required (file_id is not supported by this gateway)`, `${param}.file_data`);
      }
      const data = DATA_URL.exec(fileData);
      const mediaType = data ? data[1] : typeof part.filename === 'string' && part.filename.toLowerCase().endsWith('.pdf') ? 'application/pdf' : undefined;
      if (mediaType !== 'application/pdf') {
        throw new TranslationError(`${param}.file_data: only PDF files can be sent (got ${mediaType ?? 'an unknown type'})`, `${param}.file_data`);
      }
      return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data ? data[2] : fileData } };
    }
    default:
      throw new TranslationError(`${param}: content part type "${String(part.type)}" is not supported`, `${param}.type`);
  }
}

/**
 * A message or tool output's content (string or parts) -> native blocks. Empty text is dropped: the
 * Responses API takes an empty `input_text` (an assistant turn of only tool calls often carries one),
 * the native API refuses an empty text block ("text content blocks must be non-empty").
 */
function convertContent(content: unknown, param: string): NativeContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw new TranslationError(`${param}: must be a string or an array of content parts`, param);
  const blocks: NativeContentBlock[] = [];
  content.forEach((part, index) => {
    const block = convertContentPart(part as ResponsesInputContent, `${param}[${index}]`);
    if (block.type !== 'text' || block.text !== '') blocks.push(block);
  });
  return blocks;
}

/** A tool's output -> the content of a `tool_result` (text and images only, as the native block takes). */
function convertToolOutput(output: unknown, param: string): NativeContentBlock[] | string {
  if (typeof output === 'string') return output;
  return convertContent(output, param);
}

/** Parse a function call's JSON arguments into the native `input` object. */
function parseArguments(text: unknown, param: string): unknown {
  if (typeof text !== 'string' || text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new TranslationError(`${param}: arguments must be a JSON string`, param);
  }
}

function requireString(value: unknown, param: string): string {
  if (typeof value !== 'string' || value === '') throw new TranslationError(`${param}: must be a non-empty string`, param);
  return value;
}

/** Convert `input` (validated to be a string or an array of objects). */
export function convertResponsesInput(input: string | ResponsesInputItem[] | undefined): ConvertedInput {
  const system: string[] = [];
  const messages: ConvertedInput['messages'] = [];
  const warnings: string[] = [];
  const push = (role: 'user' | 'assistant', blocks: NativeContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  if (typeof input === 'string') {
    push('user', convertContent(input, 'input'));
    return { system, messages, warnings };
  }
  (input ?? []).forEach((raw, index) => {
    // Items are read field by field, each checked where it is used.
    const item = raw as Record<string, any>;
    const param = `input[${index}]`;
    const type = item.type ?? ('role' in item ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item.role;
        if (role === 'system' || role === 'developer') {
          const text = convertContent(item.content, `${param}.content`).map((block) => (block.type === 'text' ? String(block.text) : '')).join('');
          if (text !== '') system.push(text);
        } else if (role === 'user' || role === 'assistant') {
          push(role, convertContent(item.content, `${param}.content`));
        } else {
          throw new TranslationError(`${param}.role: must be one of "user", "assistant", "system", "developer"`, `${param}.role`);
        }
        break;
      }
      case 'function_call':
      case 'custom_tool_call': {
        const callId = requireString(item.call_id, `${param}.call_id`);
        const name = nativeToolName(requireString(item.name, `${param}.name`), typeof item.namespace === 'string' ? item.namespace : undefined);
        const input = type === 'function_call' ? parseArguments(item.arguments, `${param}.arguments`) : { input: String(item.input ?? '') };
        push('assistant', [{ type: 'tool_use', id: callId, name, input }]);
        break;
      }
      case 'local_shell_call': {
        const callId = requireString(item.call_id, `${param}.call_id`);
        const action = (item.action ?? {}) as { command?: unknown; working_directory?: unknown; timeout_ms?: unknown };
        const input: Record<string, unknown> = { command: Array.isArray(action.command) ? action.command.map(String) : [] };
        if (typeof action.working_directory === 'string') input.workdir = action.working_directory;
        if (typeof action.timeout_ms === 'number') input.timeout_ms = action.timeout_ms;
        push('assistant', [{ type: 'tool_use', id: callId, name: 'local_shell', input }]);
        break;
      }
      case 'function_call_output':
      case 'local_shell_call_output':
      case 'custom_tool_call_output': {
        const callId = requireString(item.call_id, `${param}.call_id`);
        const content = convertToolOutput(item.output, `${param}.output`);
        push('user', [{ type: 'tool_result', tool_use_id: callId, ...(content.length > 0 ? { content } : {}) }]);
        break;
      }
      case 'reasoning': {
        const block = decodeReasoning(item as { encrypted_content?: string | null });
        if (block) push('assistant', [block]);
        else warnings.push(`${param}: reasoning item without this gateway's encrypted_content left out`);
        break;
      }
      case 'web_search_call':
        warnings.push(`${param}: web_search_call item left out (the upstream searched; its results are not replayed)`);
        break;
      default:
        throw new TranslationError(`${param}.type: input item type "${String(type)}" is not supported by this gateway`, `${param}.type`);
    }
  });
  return { system, messages, warnings };
}
