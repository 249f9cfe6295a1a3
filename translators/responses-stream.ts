/**
 * Native SSE events -> Responses stream events, one stateful transform per request.
 * Sources: openai-node `responses.ts` (ResponseStreamEvent and its members) and
 * `lib/responses/ResponseAccumulator.ts` (how the SDK builds its snapshot from them); codex-rs
 * `codex-api/src/sse/responses.rs` (Codex reads `response.output_item.done` items and needs
 * `response.completed`; `response.failed` carries `response.error`); wire-formats.md §3 (native stream).
 *
 * Sequence: `response.created`, `response.in_progress` (at message_start); per native block an output
 * item: `response.output_item.added`, its part and delta events, its `.done` events and
 * `response.output_item.done` (at content_block_stop); then `response.completed` or
 * `response.incomplete` with usage (at message_stop). Every event has an increasing `sequence_number`
 * from 0. A failure (an upstream `error` event, a lost connection, a stream ending short) becomes
 * `response.failed` whose `response.error` carries the message; the stream ends there.
 *
 * The transform is pure (events in, events out) and never buffers output: each upstream event's
 * records are returned at once. It keeps the output items (full fidelity) for the final response.
 */
import { mapNativeErrorToChat, mapStreamErrorToChat, type TranslatedError } from './errors';
import { encodeReasoning } from './responses-reasoning';
import {
  convertUsage, createCallItem, createResponseShell, mapStopReasonToStatus, readThinkingTokens, readUsageCounts, viewOutputForClient,
  type ResponseOptions,
} from './responses-response';
import type { NativeUsageCounts, ResponsesOutputItem, ResponsesResponse, ResponsesStreamEvent } from './responses-types';

export interface ResponsesStreamOptions extends ResponseOptions {
  /** `include` has `reasoning.encrypted_content`: reasoning items sent carry it. */
  includeEncrypted: boolean;
}

/** One incoming native SSE event. */
export interface NativeSseEvent {
  event?: string;
  data: string;
}

export interface ResponsesStreamTransform {
  /** Translate one upstream event; returns the events to write now, in order. */
  push(event: NativeSseEvent): ResponsesStreamEvent[];
  /** The upstream stream ended: nothing when the reply was complete, else the failure events. */
  end(): ResponsesStreamEvent[];
  /** A failure outside the stream (connection lost, idle timeout): the failure events, once. */
  fail(message: string): ResponsesStreamEvent[];
  /** Billing counts so far (message_start, then message_delta's cumulative fields). */
  readonly usage: NativeUsageCounts;
  readonly stopReason: string | null;
  /** Characters of generated text and arguments sent so far (a floor for output tokens of a cut stream). */
  readonly streamedCharacters: number;
  /** True once `response.completed` / `response.incomplete` / `response.failed` was produced. */
  readonly closed: boolean;
  /** The failure that closed the stream, as the HTTP error it stands for (used when nothing was sent yet). */
  readonly error: TranslatedError | undefined;
  /** The response as it stands (full fidelity: stored copies keep every reasoning item's encrypted_content). */
  readonly response: ResponsesResponse;
}

/** What one open native block is becoming. */
interface OpenBlock {
  kind: 'message' | 'reasoning' | 'call' | 'web_search' | 'skip';
  outputIndex: number;
  itemId: string;
  text: string;
  signature: string;
  toolId: string;
  toolName: string;
  redactedData?: string;
}

const BROKEN_STREAM_STATUS = 502;

type Handler = (data: any) => void;

export function createResponsesStreamTransform(options: ResponsesStreamOptions): ResponsesStreamTransform {
  const response = createResponseShell(options);
  const usage: NativeUsageCounts = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  let thinkingTokens: number | undefined;
  let sequence = 0;
  let started = false;
  let closed = false;
  let stopReason: string | null = null;
  let streamedCharacters = 0;
  let error: TranslatedError | undefined;
  const blocks = new Map<number, OpenBlock>();
  let out: ResponsesStreamEvent[] = [];

  const emit = (type: string, fields: Record<string, unknown>) => {
    out.push({ type, sequence_number: sequence++, ...fields });
  };
  const snapshot = (): ResponsesResponse => ({ ...response, output: [...viewOutputForClient(response.output, options.includeEncrypted)] });
  const clientItem = (item: ResponsesOutputItem) => viewOutputForClient([item], options.includeEncrypted)[0];
  const start = () => {
    if (started) return;
    started = true;
    emit('response.created', { response: snapshot() });
    emit('response.in_progress', { response: snapshot() });
  };
  const addItem = (item: ResponsesOutputItem): number => {
    response.output.push(item);
    const outputIndex = response.output.length - 1;
    emit('response.output_item.added', { output_index: outputIndex, item: clientItem(item) });
    return outputIndex;
  };
  const finishItem = (open: OpenBlock, item: ResponsesOutputItem) => {
    response.output[open.outputIndex] = item;
    emit('response.output_item.done', { output_index: open.outputIndex, item: clientItem(item) });
  };

  const failWith = (translated: TranslatedError) => {
    if (closed) return;
    closed = true;
    error = translated;
    start();
    // Only response.failed, no `error` event before it: the openai SDK's ResponseStream ends on an
    // `error` event (so its client would never see response.failed), and Codex reads response.failed.
    const { message, code, type } = translated.body.error;
    response.status = 'failed';
    response.error = { code: code ?? type, message };
    response.usage = convertUsage(usage, thinkingTokens);
    emit('response.failed', { response: snapshot() });
  };
  const broken = (message: string) => failWith(mapNativeErrorToChat(BROKEN_STREAM_STATUS, { type: 'error', error: { type: 'api_error', message } }));

  const openBlock = (index: number, block: any) => {
    const open: OpenBlock = { kind: 'skip', outputIndex: -1, itemId: '', text: '', signature: '', toolId: '', toolName: '' };
    blocks.set(index, open);
    switch (block?.type) {
      case 'text': {
        open.kind = 'message';
        open.itemId = options.newId('msg');
        open.outputIndex = addItem({ type: 'message', id: open.itemId, status: 'in_progress', role: 'assistant', content: [] });
        emit('response.content_part.added', { item_id: open.itemId, output_index: open.outputIndex, content_index: 0, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
        if (typeof block.text === 'string' && block.text !== '') appendText(open, block.text);
        return;
      }
      case 'thinking':
      case 'redacted_thinking': {
        open.kind = 'reasoning';
        open.itemId = options.newId('rs');
        if (block.type === 'redacted_thinking') open.redactedData = String(block.data ?? '');
        open.outputIndex = addItem({ type: 'reasoning', id: open.itemId, summary: [] });
        if (block.type === 'thinking') {
          emit('response.reasoning_summary_part.added', { item_id: open.itemId, output_index: open.outputIndex, summary_index: 0, part: { type: 'summary_text', text: '' } });
          if (typeof block.thinking === 'string' && block.thinking !== '') appendThinking(open, block.thinking);
        }
        return;
      }
      case 'tool_use': {
        open.kind = 'call';
        open.toolId = String(block.id);
        open.toolName = String(block.name);
        open.itemId = options.newId('fc');
        const item = createCallItem({ id: open.toolId, name: open.toolName }, '', options.toolNames, open.itemId);
        open.outputIndex = addItem(item.type === 'function_call' ? { ...item, arguments: '', status: 'in_progress' } : item);
        return;
      }
      case 'server_tool_use': {
        if (block.name !== 'web_search') return;
        open.kind = 'web_search';
        open.itemId = options.newId('ws');
        open.outputIndex = addItem({ type: 'web_search_call', id: open.itemId, status: 'in_progress', action: { type: 'search' } });
        emit('response.web_search_call.in_progress', { item_id: open.itemId, output_index: open.outputIndex });
        return;
      }
      default:
        // web_search_tool_result and other server-tool results: the upstream's own, not listed.
    }
  };
  const appendText = (open: OpenBlock, text: string) => {
    open.text += text;
    streamedCharacters += text.length;
    emit('response.output_text.delta', { item_id: open.itemId, output_index: open.outputIndex, content_index: 0, delta: text, logprobs: [] });
  };
  const appendThinking = (open: OpenBlock, text: string) => {
    open.text += text;
    streamedCharacters += text.length;
    emit('response.reasoning_summary_text.delta', { item_id: open.itemId, output_index: open.outputIndex, summary_index: 0, delta: text });
  };
  const appendArguments = (open: OpenBlock, json: string) => {
    open.text += json;
    streamedCharacters += json.length;
    const item = response.output[open.outputIndex];
    if (item.type === 'function_call') emit('response.function_call_arguments.delta', { item_id: open.itemId, output_index: open.outputIndex, delta: json });
  };
  const closeBlock = (open: OpenBlock) => {
    const { itemId: item_id, outputIndex: output_index } = open;
    if (open.kind === 'message') {
      const part = { type: 'output_text' as const, text: open.text, annotations: [], logprobs: [] };
      emit('response.output_text.done', { item_id, output_index, content_index: 0, text: open.text, logprobs: [] });
      emit('response.content_part.done', { item_id, output_index, content_index: 0, part });
      finishItem(open, { type: 'message', id: item_id, status: 'completed', role: 'assistant', content: [part] });
    } else if (open.kind === 'reasoning') {
      const redacted = open.redactedData !== undefined;
      if (!redacted) {
        emit('response.reasoning_summary_text.done', { item_id, output_index, summary_index: 0, text: open.text });
        emit('response.reasoning_summary_part.done', { item_id, output_index, summary_index: 0, part: { type: 'summary_text', text: open.text } });
      }
      const block = redacted ? { type: 'redacted_thinking', data: open.redactedData } : { type: 'thinking', thinking: open.text, signature: open.signature };
      finishItem(open, { type: 'reasoning', id: item_id, summary: redacted ? [] : [{ type: 'summary_text', text: open.text }], encrypted_content: encodeReasoning(block) });
    } else if (open.kind === 'call') {
      const item = createCallItem({ id: open.toolId, name: open.toolName }, open.text, options.toolNames, item_id);
      if (item.type === 'function_call') emit('response.function_call_arguments.done', { item_id, output_index, name: item.name, arguments: item.arguments });
      else if (item.type === 'custom_tool_call') emit('response.custom_tool_call_input.done', { item_id, output_index, input: item.input });
      finishItem(open, { ...item, id: item_id });
    } else if (open.kind === 'web_search') {
      let query = '';
      try {
        query = String((JSON.parse(open.text || '{}') as { query?: unknown }).query ?? '');
      } catch {
        // an unreadable query is reported empty
      }
      emit('response.web_search_call.completed', { item_id, output_index });
      finishItem(open, { type: 'web_search_call', id: item_id, status: 'completed', action: { type: 'search', query } });
    }
  };

  const handlers: Record<string, Handler> = {
    message_start(data) {
      readUsageCounts(data?.message?.usage, usage);
      start();
    },
    content_block_start(data) {
      start();
      if (typeof data?.index === 'number') openBlock(data.index, data.content_block);
    },
    content_block_delta(data) {
      const open = blocks.get(data?.index);
      const delta = data?.delta;
      if (!open || !delta) return;
      if (delta.type === 'text_delta' && open.kind === 'message' && typeof delta.text === 'string' && delta.text !== '') appendText(open, delta.text);
      else if (delta.type === 'thinking_delta' && open.kind === 'reasoning' && typeof delta.thinking === 'string' && delta.thinking !== '') appendThinking(open, delta.thinking);
      else if (delta.type === 'signature_delta' && open.kind === 'reasoning' && typeof delta.signature === 'string') open.signature += delta.signature;
      else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
        if (open.kind === 'call') appendArguments(open, delta.partial_json);
        else if (open.kind === 'web_search') open.text += delta.partial_json;
      }
    },
    content_block_stop(data) {
      const open = blocks.get(data?.index);
      if (!open) return;
      blocks.delete(data.index);
      closeBlock(open);
    },
    message_delta(data) {
      readUsageCounts(data?.usage, usage);
      thinkingTokens = readThinkingTokens(data?.usage) ?? thinkingTokens;
      if (typeof data?.delta?.stop_reason === 'string') stopReason = data.delta.stop_reason;
    },
    message_stop() {
      start();
      for (const [index, open] of blocks) {
        blocks.delete(index);
        closeBlock(open);
      }
      closed = true;
      Object.assign(response, mapStopReasonToStatus(stopReason));
      response.usage = convertUsage(usage, thinkingTokens);
      emit(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: snapshot() });
    },
    error(data) {
      failWith(mapStreamErrorToChat(data));
    },
  };

  const take = () => {
    const records = out;
    out = [];
    return records;
  };

  return {
    push(event) {
      if (closed) return [];
      const name = event.event ?? 'message';
      const handler = handlers[name];
      if (!handler) return []; // ping, and event types added later
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        broken(`the upstream sent an unreadable ${name} event`);
        return take();
      }
      handler(data);
      return take();
    },
    end() {
      if (!closed) broken('the upstream stream ended before the reply was complete');
      return take();
    },
    fail(message) {
      broken(message);
      return take();
    },
    get usage() {
      return usage;
    },
    get stopReason() {
      return stopReason;
    },
    get streamedCharacters() {
      return streamedCharacters;
    },
    get closed() {
      return closed;
    },
    get error() {
      return error;
    },
    get response() {
      return response;
    },
  };
}
