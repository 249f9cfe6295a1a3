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
import type { ChatErrorBody } from './chat-types';
import type { StreamTransform, WholeReply } from './stream-transform';
import { mapNativeErrorToChat, mapStreamErrorToChat } from './native-to-chat-errors';
import {
  convertUsage, createResponseShell, mapStopReasonToStatus, viewOutputForClient,
  type ResponseOptions,
} from './responses-response';
import { createOutputItems } from './responses-stream-items';
import { emptyUsage, mergeNativeUsage, readThinkingTokenCount } from './usage';
import { readDeltaEvent } from './native-layout';
import { ResponsesDeltaEvent } from './responses-delta-events';
import type { ResponsesResponse, ResponsesStreamRecord } from './responses-types';

export interface ResponsesStreamOptions extends ResponseOptions {
  /** `include` has `reasoning.encrypted_content`: reasoning items sent carry it. */
  includeEncrypted: boolean;
}

/**
 * The transform of one streamed reply; closed by `response.completed` / `response.incomplete` /
 * `response.failed`.
 */
export interface ResponsesStreamTransform extends StreamTransform<ResponsesStreamRecord> {
  /** The response as it stands (full fidelity: stored copies keep every reasoning item's encrypted_content). */
  readonly response: ResponsesResponse;
}

const BROKEN_STREAM_STATUS = 502;

type Handler = (data: any) => void;

/** The failure a reply that filled the model's context window ends with. */
export const CONTEXT_WINDOW_EXCEEDED: WholeReply<ChatErrorBody> = {
  status: 400,
  body: { error: { message: 'the conversation filled the model\'s context window', type: 'invalid_request_error', param: null, code: 'context_length_exceeded' } },
  headers: {},
};

export function createResponsesStreamTransform(options: ResponsesStreamOptions): ResponsesStreamTransform {
  const response = createResponseShell(options);
  const usage = emptyUsage();
  let thinkingTokens: number | undefined;
  let sequence = 0;
  let started = false;
  let closed = false;
  let stopReason: string | null = null;
  let error: WholeReply<ChatErrorBody> | undefined;
  let out: ResponsesStreamRecord[] = [];

  const emit = (type: string, fields: Record<string, unknown>) => {
    out.push({ type, sequence_number: sequence++, ...fields });
  };
  const push = (record: ResponsesStreamRecord) => {
    out.push(record);
  };
  const nextSequence = () => sequence++;
  const snapshot = (): ResponsesResponse => ({ ...response, output: [...viewOutputForClient(response.output, options.includeEncrypted)] });
  const start = () => {
    if (started) return;
    started = true;
    emit('response.created', { response: snapshot() });
    emit('response.in_progress', { response: snapshot() });
  };
  const items = createOutputItems({ ...options, response, emit, push, nextSequence });
  const failWith = (translated: WholeReply<ChatErrorBody>) => {
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

  const handlers: Record<string, Handler> = {
    message_start(data) {
      mergeNativeUsage(usage, data?.message?.usage);
      start();
    },
    content_block_start(data) {
      start();
      if (typeof data?.index === 'number') items.open(data.index, data.content_block);
    },
    content_block_delta(data) {
      items.delta(data?.index, data?.delta);
    },
    content_block_stop(data) {
      items.close(data?.index);
    },
    message_delta(data) {
      mergeNativeUsage(usage, data?.usage);
      thinkingTokens = readThinkingTokenCount(data?.usage) ?? thinkingTokens;
      if (typeof data?.delta?.stop_reason === 'string') stopReason = data.delta.stop_reason;
    },
    message_stop() {
      start();
      items.closeAll();
      if (stopReason === 'model_context_window_exceeded') {
        // Codex recovers (compacts its history) from response.failed with this code, not from an
        // incomplete response (codex-rs codex-api/src/sse/responses.rs, is_context_window_error).
        failWith(CONTEXT_WINDOW_EXCEEDED);
        return;
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
      // A text, tool-input or thinking delta in the API's layout is read without parsing (native-layout.ts).
      let data: unknown = name === 'content_block_delta' ? readDeltaEvent(event.data) : undefined;
      if (data === undefined) {
        try {
          data = JSON.parse(event.data);
        } catch {
          broken(`the upstream sent an unreadable ${name} event`);
          return take();
        }
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
      return items.streamedCharacters;
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

/**
 * An event as the JSON text of its `data:` line, the bytes `JSON.stringify` writes. Kept for speed: the
 * delta events, most of a stream, write their own JSON (responses-delta-events.ts; a test checks the
 * bytes are the same) instead of `JSON.stringify` walking each (RESULTS.md); any other event goes to
 * JSON.stringify.
 */
export function serializeResponsesStreamRecord(record: ResponsesStreamRecord): string {
  return record instanceof ResponsesDeltaEvent ? record.json() : JSON.stringify(record);
}
