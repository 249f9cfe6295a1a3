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
import { createOutputItems, type OutputItems } from './responses-stream-items';
import { readThinkingTokenCount } from './usage';
import { eventHandlers, StreamTransformBase } from './stream-base';
import { ResponsesDeltaEvent, writeResponsesDeltaEvent } from './responses-delta-events';
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

/** The failure a reply that filled the model's context window ends with. */
export const CONTEXT_WINDOW_EXCEEDED: WholeReply<ChatErrorBody> = {
  status: 400,
  body: { error: { message: 'the conversation filled the model\'s context window', type: 'invalid_request_error', param: null, code: 'context_length_exceeded' } },
  headers: {},
};

export function createResponsesStreamTransform(options: ResponsesStreamOptions): ResponsesStreamTransform {
  return new ResponsesStream(options);
}

/** The Responses transform on the stream base (stream-base.ts): one handler per native event type. */
class ResponsesStream extends StreamTransformBase<ResponsesStreamRecord> implements ResponsesStreamTransform {
  declare error: WholeReply<ChatErrorBody> | undefined;
  readonly response: ResponsesResponse;
  private thinkingTokens: number | undefined;
  private sequence = 0;
  private started = false;
  /** The events of the upstream event being handled, taken by `take` when it is done. */
  private out: ResponsesStreamRecord[] = [];
  private readonly items: OutputItems;

  constructor(private readonly options: ResponsesStreamOptions) {
    super();
    this.response = createResponseShell(options);
    this.items = createOutputItems({
      ...options,
      response: this.response,
      emit: (type, fields) => this.emit(type, fields),
      push: (record) => {
        this.out.push(record);
      },
      nextSequence: () => this.sequence++,
      countStreamed: (characters) => {
        this.streamedCharacters += characters;
      },
    });
  }

  protected readonly handlers = eventHandlers<ResponsesStreamRecord>({
    message_start: (data) => {
      this.mergeUsage(data?.message?.usage, false);
      this.start();
      return this.take();
    },
    content_block_start: (data) => {
      this.start();
      if (typeof data?.index === 'number') this.items.open(data.index, data.content_block);
      return this.take();
    },
    content_block_delta: (data) => {
      this.items.delta(data?.index, data?.delta);
      return this.take();
    },
    content_block_stop: (data) => {
      this.items.close(data?.index);
      return this.take();
    },
    message_delta: (data) => {
      this.mergeUsage(data?.usage, true);
      this.thinkingTokens = readThinkingTokenCount(data?.usage) ?? this.thinkingTokens;
      if (typeof data?.delta?.stop_reason === 'string') this.stopReason = data.delta.stop_reason;
      return this.take();
    },
    message_stop: () => {
      this.start();
      this.items.closeAll();
      if (this.stopReason === 'model_context_window_exceeded') {
        // Codex recovers (compacts its history) from response.failed with this code, not from an
        // incomplete response (codex-rs codex-api/src/sse/responses.rs, is_context_window_error).
        return this.closeWith(() => this.failed(CONTEXT_WINDOW_EXCEEDED));
      }
      this.closed = true;
      const { response } = this;
      Object.assign(response, mapStopReasonToStatus(this.stopReason));
      response.usage = convertUsage(this.usage, this.thinkingTokens);
      this.emit(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: this.snapshot() });
      return this.take();
    },
    error: (data) => this.closeWith(() => this.failed(mapStreamErrorToChat(data))),
  });

  /** A broken stream: `response.failed` with a 502's error. */
  protected failure(message: string): ResponsesStreamRecord[] {
    return this.failed(mapNativeErrorToChat(BROKEN_STREAM_STATUS, { type: 'error', error: { type: 'api_error', message } }));
  }

  /**
   * The events that end a failed stream: only response.failed, no `error` event before it (the openai
   * SDK's ResponseStream ends on an `error` event, so its client would never see response.failed, and
   * Codex reads response.failed); the response's `error` carries the message.
   */
  private failed(translated: WholeReply<ChatErrorBody>): ResponsesStreamRecord[] {
    this.error = translated;
    this.start();
    const { message, code, type } = translated.body.error;
    const { response } = this;
    response.status = 'failed';
    response.error = { code: code ?? type, message };
    response.usage = convertUsage(this.usage, this.thinkingTokens);
    this.emit('response.failed', { response: this.snapshot() });
    return this.take();
  }

  private emit(type: string, fields: Record<string, unknown>): void {
    this.out.push({ type, sequence_number: this.sequence++, ...fields });
  }

  private snapshot(): ResponsesResponse {
    return { ...this.response, output: [...viewOutputForClient(this.response.output, this.options.includeEncrypted)] };
  }

  /** response.created and response.in_progress, once, before any other event. */
  private start(): void {
    if (this.started) return;
    this.started = true;
    this.emit('response.created', { response: this.snapshot() });
    this.emit('response.in_progress', { response: this.snapshot() });
  }

  private take(): ResponsesStreamRecord[] {
    const records = this.out;
    this.out = [];
    return records;
  }
}

/**
 * An event as the JSON text of its `data:` line, the bytes `JSON.stringify` writes: a delta event, most
 * of a stream, from its type's plain string template (responses-delta-events.ts; a property test checks
 * the bytes are the same), any other event by JSON.stringify.
 */
export function serializeResponsesStreamRecord(record: ResponsesStreamRecord): string {
  return record instanceof ResponsesDeltaEvent ? writeResponsesDeltaEvent(record) : JSON.stringify(record);
}
