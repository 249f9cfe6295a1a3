/**
 * Native SSE events -> chat-completions chunks, one stateful transform per request.
 * Source: wire-formats.md §3 (native stream grammar) and §8.6 (mapping); chunk order per the spec's
 * Events section: role chunk, content chunks, final chunk with finish_reason, [DONE].
 */
import { emptyUsage, type Usage } from '../lib/context';
import type { SseEvent } from '../lib/sse';
import type { ChatChunkDelta, ChatCompletionChunk, ChatErrorBody } from './chat-types';
import { toChatId } from './chat-response';
import { mapNativeErrorToChat } from './errors';
import { mapStopReason, type FinishReason } from './stop-reason';
import { convertUsageToChat, mergeNativeUsage } from './usage';

/** What the transform asks the caller to write: a chunk, an in-stream error record, or the terminator. */
export type ChatStreamRecord = ChatCompletionChunk | ChatErrorBody | '[DONE]';

export interface ChatStreamOptions {
  /** Canonical model ID reported in every chunk. */
  model: string;
  /** `created` of every chunk, unix seconds. */
  created: number;
  /** `stream_options.include_usage`: one last chunk with empty `choices` and the usage. */
  includeUsage: boolean;
  onUnknownStopReason?: (value: string) => void;
}

export interface ChatStreamTransform {
  /** Translate one upstream event; returns the records to write now, in order. */
  push(event: SseEvent): ChatStreamRecord[];
  /**
   * The upstream stream ended. Returns nothing when the reply was complete; otherwise an error record
   * (never a `[DONE]`), so the client sees a failure rather than a truncated stream that looks complete.
   */
  end(): ChatStreamRecord[];
  /** A failure outside the stream (connection lost, idle timeout): one error record, once. */
  fail(message: string, code?: string): ChatStreamRecord[];
  /** Usage seen so far (message_start, overwritten by message_delta fields). */
  readonly usage: Usage;
  /** Stop reason from message_delta, once seen. */
  readonly stopReason: string | null;
  /** True once `[DONE]` or an error record was produced. */
  readonly closed: boolean;
}

type Handler = (data: any) => ChatStreamRecord[];

/** Create the transform for one streamed reply. */
export function createChatStreamTransform(options: ChatStreamOptions): ChatStreamTransform {
  let id = toChatId(undefined);
  let stopReason: string | null = null;
  let finishReason: FinishReason | null = null;
  let closed = false;
  const usage = emptyUsage();
  const usageField = options.includeUsage ? { usage: null } : {};

  const chunk = (delta: ChatChunkDelta, finish: FinishReason | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created: options.created,
    model: options.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...usageField,
  });

  const errorRecord = (message: string, nativeType: string): ChatStreamRecord[] => {
    if (closed) return [];
    closed = true;
    return [mapNativeErrorToChat(500, { type: 'error', error: { type: nativeType, message } }).body];
  };

  const handlers: Record<string, Handler> = {
    message_start(data) {
      if (typeof data?.message?.id === 'string') id = toChatId(data.message.id);
      mergeNativeUsage(usage, data?.message?.usage);
      return [chunk({ role: 'assistant', content: '' })];
    },
    content_block_delta(data) {
      if (data?.delta?.type === 'text_delta' && typeof data.delta.text === 'string' && data.delta.text !== '') {
        return [chunk({ content: data.delta.text })];
      }
      return [];
    },
    message_delta(data) {
      mergeNativeUsage(usage, data?.usage);
      if (data?.delta && 'stop_reason' in data.delta) {
        stopReason = data.delta.stop_reason ?? null;
        finishReason = mapStopReason(stopReason, options.onUnknownStopReason);
      }
      return [];
    },
    message_stop() {
      closed = true;
      const records: ChatStreamRecord[] = [chunk({}, finishReason ?? 'stop')];
      if (options.includeUsage) {
        records.push({
          id, object: 'chat.completion.chunk', created: options.created, model: options.model, choices: [],
          usage: convertUsageToChat(usage),
        });
      }
      records.push('[DONE]');
      return records;
    },
    error(data) {
      return errorRecord(String(data?.error?.message ?? 'upstream error'), String(data?.error?.type ?? 'api_error'));
    },
  };

  return {
    push(event) {
      if (closed) return [];
      const name = event.event ?? 'message';
      const handler = handlers[name];
      if (!handler) return []; // ping, content_block_start/stop of text, and event types added later
      let data: unknown;
      try {
        data = JSON.parse(event.data);
      } catch {
        return errorRecord(`the upstream sent an unreadable ${name} event`, 'api_error');
      }
      return handler(data);
    },
    end() {
      return closed ? [] : errorRecord('the upstream stream ended before the reply was complete', 'api_error');
    },
    fail(message, code = 'api_error') {
      return errorRecord(message, code);
    },
    get usage() {
      return usage;
    },
    get stopReason() {
      return stopReason;
    },
    get closed() {
      return closed;
    },
  };
}
