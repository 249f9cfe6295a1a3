/**
 * The output items of a streamed Responses reply, one per native content block: the events that
 * open an item, carry its deltas and close it (openai-node `responses.ts`: ResponseOutputItemAddedEvent,
 * ResponseContentPartAddedEvent, ResponseTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent,
 * ResponseFunctionCallArgumentsDeltaEvent, ... ResponseOutputItemDoneEvent). Used by
 * responses-stream.ts, which owns the response's lifecycle events around them.
 *
 * - `text` -> `message` with one `output_text` part (content_part.added, output_text.delta...,
 *   output_text.done, content_part.done);
 * - `thinking` -> `reasoning` with one `summary_text` (reasoning_summary_part.added,
 *   reasoning_summary_text.delta..., .done, reasoning_summary_part.done); the signature collected from
 *   `signature_delta` goes into `encrypted_content`; `redacted_thinking` -> a reasoning item with no
 *   summary;
 * - `tool_use` -> `function_call` (function_call_arguments.delta..., .done) or, for a free-text tool,
 *   `custom_tool_call` (custom_tool_call_input.delta with the unwrapped text as it decodes, then .done);
 * - `server_tool_use` web search -> `web_search_call` (web_search_call.in_progress, .completed);
 * - other blocks (server tool results) -> nothing.
 */
import { ResponsesDeltaEvent } from './responses-delta-events';
import { createHeldText, type HeldText } from './held-text';
import { encodeReasoning } from './responses-reasoning';
import { createCallItem, viewOutputForClient, type ResponseOptions } from './responses-response';
import type { ResponsesOutputItem, ResponsesResponse, ResponsesStreamRecord } from './responses-types';

export interface OutputItemsOptions extends Pick<ResponseOptions, 'toolNames' | 'newId'> {
  includeEncrypted: boolean;
  /** The response being built: items are added to and replaced in its `output`. */
  response: ResponsesResponse;
  /** Emit one event (the caller numbers it). */
  emit(type: string, fields: Record<string, unknown>): void;
  /** Emit one event already numbered (with `nextSequence`): the delta events (responses-delta-events.ts). */
  push(record: ResponsesStreamRecord): void;
  /** The next sequence number (taken). */
  nextSequence(): number;
  /** Count `characters` of generated text, thinking or arguments sent (the output-token floor's measure, stream-base.ts). */
  countStreamed(characters: number): void;
}

export interface OutputItems {
  /** A native block started at `index`. */
  open(index: number, block: any): void;
  /** A `content_block_delta` for `index`. */
  delta(index: number, delta: any): void;
  /** The block at `index` stopped. */
  close(index: number): void;
  /** Close every block still open (the message stopped). */
  closeAll(): void;
}

/** What one open native block is becoming. */
interface OpenBlock {
  kind: 'message' | 'reasoning' | 'call' | 'web_search' | 'skip';
  outputIndex: number;
  itemId: string;
  /** Argument JSON (or a web search's input) so far. */
  text: string;
  /** Text or thinking so far (kept compactly: a long reply's is most of what its stream holds). */
  generated: HeldText;
  signature: string;
  toolId: string;
  toolName: string;
  redactedData?: string;
  /**
   * Custom tool calls: where in `text` decoding of the unwrapped input resumes (each fragment is
   * decoded once); undefined before the value starts, -1 once it is closed.
   */
  inputAt?: number;
}

const JSON_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const HEX4 = /^[0-9a-fA-F]{4}$/;
/** Where the custom tool stand-in's `{"input": "..."}` string value starts. */
const INPUT_VALUE_START = /"input"\s*:\s*"/;

/**
 * Decode the characters of a JSON string value in `json` from index `at` (just past its opening quote
 * or a previous stop): up to the closing quote or the last complete character, stopping before an
 * escape cut in half (it completes with the next fragment).
 * @returns the decoded text, the index to resume from, and whether the closing quote was reached
 */
export function decodeJsonStringFrom(json: string, at: number): { text: string; next: number; closed: boolean } {
  let out = '';
  let i = at;
  for (; i < json.length; i++) {
    const c = json[i];
    if (c === '"') return { text: out, next: i + 1, closed: true };
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = json[i + 1];
    if (next === undefined) break;
    if (next === 'u') {
      const hex = json.slice(i + 2, i + 6);
      if (!HEX4.test(hex)) break;
      out += String.fromCharCode(parseInt(hex, 16));
      i += 5;
    } else {
      out += JSON_ESCAPES[next] ?? next;
      i += 1;
    }
  }
  return { text: out, next: i, closed: false };
}

/**
 * The decoded prefix of the string value of `field` in a partial JSON object text (as a native
 * tool_use input streams in `input_json_delta` fragments): everything up to the closing quote or to
 * the last complete character, an escape cut in half waiting for its next fragment. '' before the
 * value starts.
 */
export function readPartialJsonString(json: string, field: string): string {
  const start = new RegExp(`"${field}"\\s*:\\s*"`).exec(json);
  return start ? decodeJsonStringFrom(json, start.index + start[0].length).text : '';
}

export function createOutputItems(options: OutputItemsOptions): OutputItems {
  const { response, emit, push, nextSequence, countStreamed } = options;
  const blocks = new Map<number, OpenBlock>();

  const clientItem = (item: ResponsesOutputItem) => viewOutputForClient([item], options.includeEncrypted)[0];
  const add = (open: OpenBlock, item: ResponsesOutputItem) => {
    response.output.push(item);
    open.outputIndex = response.output.length - 1;
    emit('response.output_item.added', { output_index: open.outputIndex, item: clientItem(item) });
  };
  const finish = (open: OpenBlock, item: ResponsesOutputItem) => {
    response.output[open.outputIndex] = item;
    emit('response.output_item.done', { output_index: open.outputIndex, item: clientItem(item) });
  };
  const where = (open: OpenBlock) => ({ item_id: open.itemId, output_index: open.outputIndex });

  const appendText = (open: OpenBlock, text: string) => {
    open.generated.append(text);
    countStreamed(text.length);
    push(new ResponsesDeltaEvent('response.output_text.delta', nextSequence(), open.itemId, open.outputIndex, text));
  };
  const appendThinking = (open: OpenBlock, text: string) => {
    open.generated.append(text);
    countStreamed(text.length);
    push(new ResponsesDeltaEvent('response.reasoning_summary_text.delta', nextSequence(), open.itemId, open.outputIndex, text));
  };
  const appendArguments = (open: OpenBlock, json: string) => {
    open.text += json;
    countStreamed(json.length);
    const type = response.output[open.outputIndex].type;
    if (type === 'function_call') {
      push(new ResponsesDeltaEvent('response.function_call_arguments.delta', nextSequence(), open.itemId, open.outputIndex, json));
    } else if (type === 'custom_tool_call') {
      // The native stand-in wraps the free text as {"input": "..."}: stream the text as it decodes,
      // each fragment once (a large apply_patch input would otherwise be decoded again per fragment).
      if (open.inputAt === undefined) {
        const start = INPUT_VALUE_START.exec(open.text);
        if (!start) return;
        open.inputAt = start.index + start[0].length;
      }
      if (open.inputAt < 0) return;
      const { text: delta, next, closed } = decodeJsonStringFrom(open.text, open.inputAt);
      open.inputAt = closed ? -1 : next;
      if (delta === '') return;
      push(new ResponsesDeltaEvent('response.custom_tool_call_input.delta', nextSequence(), open.itemId, open.outputIndex, delta));
    }
  };

  /** Per native block type: start the item. */
  const openers: Record<string, (open: OpenBlock, block: any) => void> = {
    text(open, block) {
      open.kind = 'message';
      open.itemId = options.newId('msg');
      add(open, { type: 'message', id: open.itemId, status: 'in_progress', role: 'assistant', content: [] });
      emit('response.content_part.added', { ...where(open), content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
      if (typeof block.text === 'string' && block.text !== '') appendText(open, block.text);
    },
    thinking(open, block) {
      open.kind = 'reasoning';
      open.itemId = options.newId('rs');
      add(open, { type: 'reasoning', id: open.itemId, summary: [] });
      emit('response.reasoning_summary_part.added', { ...where(open), summary_index: 0, part: { type: 'summary_text', text: '' } });
      if (typeof block.thinking === 'string' && block.thinking !== '') appendThinking(open, block.thinking);
    },
    redacted_thinking(open, block) {
      open.kind = 'reasoning';
      open.itemId = options.newId('rs');
      open.redactedData = String(block.data ?? '');
      add(open, { type: 'reasoning', id: open.itemId, summary: [] });
    },
    tool_use(open, block) {
      open.kind = 'call';
      open.toolId = String(block.id);
      open.toolName = String(block.name);
      open.itemId = options.newId('fc');
      const item = createCallItem({ id: open.toolId, name: open.toolName }, '', options.toolNames, open.itemId);
      if (item.type === 'function_call') add(open, { ...item, arguments: '', status: 'in_progress' });
      else if (item.type === 'local_shell_call') add(open, { ...item, status: 'in_progress' });
      else add(open, item);
    },
    server_tool_use(open, block) {
      if (block.name !== 'web_search') return;
      open.kind = 'web_search';
      open.itemId = options.newId('ws');
      add(open, { type: 'web_search_call', id: open.itemId, status: 'in_progress', action: { type: 'search' } });
      emit('response.web_search_call.in_progress', where(open));
    },
  };

  /** Per item kind: the closing events and the whole item. */
  const closers: Record<OpenBlock['kind'], (open: OpenBlock) => void> = {
    message(open) {
      const text = open.generated.toString();
      const part = { type: 'output_text' as const, text, annotations: [], logprobs: [] };
      emit('response.output_text.done', { ...where(open), content_index: 0, text, logprobs: [] });
      emit('response.content_part.done', { ...where(open), content_index: 0, part });
      finish(open, { type: 'message', id: open.itemId, status: 'completed', role: 'assistant', content: [part] });
    },
    reasoning(open) {
      if (open.redactedData !== undefined) {
        finish(open, { type: 'reasoning', id: open.itemId, summary: [], encrypted_content: encodeReasoning({ type: 'redacted_thinking', data: open.redactedData }) });
        return;
      }
      const text = open.generated.toString();
      emit('response.reasoning_summary_text.done', { ...where(open), summary_index: 0, text });
      emit('response.reasoning_summary_part.done', { ...where(open), summary_index: 0, part: { type: 'summary_text', text } });
      const block = { type: 'thinking', thinking: text, signature: open.signature };
      finish(open, { type: 'reasoning', id: open.itemId, summary: [{ type: 'summary_text', text }], encrypted_content: encodeReasoning(block) });
    },
    call(open) {
      const item = createCallItem({ id: open.toolId, name: open.toolName }, open.text, options.toolNames, open.itemId);
      if (item.type === 'function_call') emit('response.function_call_arguments.done', { ...where(open), name: item.name, arguments: item.arguments });
      else if (item.type === 'custom_tool_call') emit('response.custom_tool_call_input.done', { ...where(open), input: item.input });
      finish(open, item);
    },
    web_search(open) {
      let query = '';
      try {
        query = String((JSON.parse(open.text || '{}') as { query?: unknown }).query ?? '');
      } catch {
        // an unreadable query is reported empty
      }
      emit('response.web_search_call.completed', where(open));
      finish(open, { type: 'web_search_call', id: open.itemId, status: 'completed', action: { type: 'search', query } });
    },
    skip() {},
  };

  const close = (index: number) => {
    const open = blocks.get(index);
    if (!open) return;
    blocks.delete(index);
    closers[open.kind](open);
  };

  return {
    open(index, block) {
      const open: OpenBlock = { kind: 'skip', outputIndex: -1, itemId: '', text: '', generated: createHeldText(), signature: '', toolId: '', toolName: '' };
      blocks.set(index, open);
      openers[block?.type]?.(open, block);
    },
    delta(index, delta) {
      const open = blocks.get(index);
      if (!open || !delta) return;
      if (delta.type === 'text_delta' && open.kind === 'message' && typeof delta.text === 'string' && delta.text !== '') appendText(open, delta.text);
      else if (delta.type === 'thinking_delta' && open.kind === 'reasoning' && typeof delta.thinking === 'string' && delta.thinking !== '') appendThinking(open, delta.thinking);
      else if (delta.type === 'signature_delta' && open.kind === 'reasoning' && typeof delta.signature === 'string') open.signature += delta.signature;
      else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
        if (open.kind === 'call') appendArguments(open, delta.partial_json);
        else if (open.kind === 'web_search') open.text += delta.partial_json;
      }
    },
    close,
    closeAll() {
      for (const index of [...blocks.keys()]) close(index);
    },
  };
}
