/**
 * Reverse translation, stream side: `chat.completion.chunk` records from a chat-completions upstream
 * become native SSE events, always with `event:` names (wire-formats.md §8.6 "Reverse", §3 grammar).
 *
 *   first chunk                -> message_start (usage zeros: the input side is not known yet)
 *   first delta.content        -> content_block_start{text} + text_delta (then text_delta per chunk)
 *   new tool_calls[].index     -> close the open block, content_block_start{tool_use, id, name, input: {}},
 *                                 then input_json_delta per arguments fragment
 *   finish_reason              -> content_block_stop (+ message_delta once usage is known)
 *   usage chunk                -> message_delta{stop_reason, usage}
 *   [DONE]                     -> message_stop
 *   error record / lost stream -> `error` event; the stream never ends as if it had completed
 *
 * A stateful transform created per request; pure (no I/O).
 */
import { emptyUsage, toNativeTokenCounts, type Usage } from './usage';
import {
  convertChatUsageToNative, convertStreamErrorToNativeReply, mapChatErrorTypeToNative, mapFinishReasonToStopReason, type ReportedChatUsage,
} from './chat-to-native-mapping';
import { toMessageId } from './chat-to-native-response';
import type { SseEvent } from './native-types';
import type { WholeReply, StreamTransform } from './stream-transform';

/** One native SSE event: its `event:` name and its data (whose `type` equals the name). */
export interface NativeStreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/** A chunk as an upstream sends it (fields the translation reads). */
export interface UpstreamChatChunk {
  id?: string;
  choices?: Array<{
    index?: number;
    delta?: { content?: string | null; tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }> | null };
    finish_reason?: string | null;
  }>;
  usage?: ReportedChatUsage | null;
  error?: { message?: string; type?: string; code?: string | null };
}

/**
 * The transform of one streamed reply: `push` takes the upstream's SSE events (a chunk's JSON, or
 * `[DONE]`); closed by message_stop or an `error` event. `error` is that event as a native error
 * reply (429, 400 or 502, with `request_id`) for a failure before any byte went out.
 */
export interface ReverseStreamTransform extends StreamTransform<NativeStreamEvent> {
  /** Events for one upstream chunk (already JSON-parsed). */
  pushChunk(chunk: UpstreamChatChunk): NativeStreamEvent[];
  /** Events for the `data: [DONE]` terminator. */
  done(): NativeStreamEvent[];
}

/**
 * @param options.model the canonical model named in message_start
 * @param options.requestId the gateway's request id, put in the body of `error`
 */
export function createReverseStreamTransform(options: { model: string; requestId?: string }): ReverseStreamTransform {
  const usage: Usage = emptyUsage();
  let started = false;
  let closed = false;
  let stopReason: string | null = null;
  let usageSeen = false;
  let deltaSent = false;
  let nextBlock = 0;
  let error: WholeReply | undefined;
  let open: { kind: 'text' } | { kind: 'tool'; toolIndex: number } | null = null;

  const closeBlock = (out: NativeStreamEvent[]) => {
    if (!open) return;
    out.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index: nextBlock - 1 } });
    open = null;
  };
  const messageDelta = (out: NativeStreamEvent[]) => {
    if (deltaSent || stopReason === null) return;
    deltaSent = true;
    out.push({ event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: toNativeTokenCounts(usage) } });
  };
  const start = (chunk: UpstreamChatChunk, out: NativeStreamEvent[]) => {
    if (started) return;
    started = true;
    out.push({
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: toMessageId(chunk.id), type: 'message', role: 'assistant', model: options.model, content: [],
          stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 },
        },
      },
    });
  };

  function pushChunk(chunk: UpstreamChatChunk): NativeStreamEvent[] {
    if (closed) return [];
    if (chunk.error) return failWith(chunk.error.message ?? 'the upstream reported an error', mapChatErrorTypeToNative(chunk.error.type, chunk.error.code));
    const out: NativeStreamEvent[] = [];
    start(chunk, out);
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    const delta = choice?.delta;
    if (typeof delta?.content === 'string' && delta.content !== '') {
      if (open?.kind !== 'text') {
        closeBlock(out);
        out.push({ event: 'content_block_start', data: { type: 'content_block_start', index: nextBlock++, content_block: { type: 'text', text: '' } } });
        open = { kind: 'text' };
      }
      out.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index: nextBlock - 1, delta: { type: 'text_delta', text: delta.content } } });
    }
    for (const call of delta?.tool_calls ?? []) {
      const toolIndex = call.index ?? 0;
      if (open?.kind !== 'tool' || open.toolIndex !== toolIndex) {
        closeBlock(out);
        out.push({
          event: 'content_block_start',
          data: { type: 'content_block_start', index: nextBlock++, content_block: { type: 'tool_use', id: call.id ?? `toolu_${toolIndex}`, name: call.function?.name ?? '', input: {} } },
        });
        open = { kind: 'tool', toolIndex };
      }
      const fragment = call.function?.arguments;
      if (fragment) {
        out.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index: nextBlock - 1, delta: { type: 'input_json_delta', partial_json: fragment } } });
      }
    }
    if (chunk.usage) {
      Object.assign(usage, convertChatUsageToNative(chunk.usage));
      usageSeen = true;
    }
    if (choice?.finish_reason) {
      stopReason = mapFinishReasonToStopReason(choice.finish_reason);
      closeBlock(out);
    }
    if (usageSeen) messageDelta(out);
    return out;
  }

  function done(): NativeStreamEvent[] {
    if (closed) return [];
    if (stopReason === null) return fail('the upstream stream ended without a finish reason');
    const out: NativeStreamEvent[] = [];
    messageDelta(out);
    out.push({ event: 'message_stop', data: { type: 'message_stop' } });
    closed = true;
    return out;
  }

  function end(): NativeStreamEvent[] {
    // Some upstreams close after the finish chunk without `[DONE]`; a finish reason makes it complete.
    return closed ? [] : stopReason !== null ? done() : fail('the upstream connection was lost mid-stream');
  }

  /** An error event (lost connection, unreadable record, the upstream's error record); closes the stream. */
  function failWith(message: string, type = 'api_error'): NativeStreamEvent[] {
    if (closed) return [];
    closed = true;
    const reply = convertStreamErrorToNativeReply({ type, message });
    error = { status: reply.status, headers: {}, body: options.requestId ? { ...reply.body, request_id: options.requestId } : reply.body };
    return [{ event: 'error', data: { type: 'error', error: { type, message } } }];
  }

  const fail = (message: string) => failWith(message);

  function push(event: SseEvent): NativeStreamEvent[] {
    if (event.data === '[DONE]') return done();
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      chunk = undefined;
    }
    return chunk && typeof chunk === 'object' ? pushChunk(chunk as UpstreamChatChunk) : fail('the upstream sent a record that is not JSON');
  }

  return {
    push, pushChunk, done, end, fail, usage,
    get stopReason() { return stopReason; },
    get closed() { return closed; },
    get error() { return error; },
    // The usage of a cut stream is what the upstream reported: its chunks carry no estimate of their own.
    streamedCharacters: 0,
  };
}
