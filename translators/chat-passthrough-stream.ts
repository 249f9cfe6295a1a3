/**
 * Chat-completions pass-through, stream side: the `chat.completion.chunk` records of a chat-completions
 * upstream go to the client as they are, reading usage and finish reason on the way (wire-formats.md §7).
 * A record is re-serialised only when it must change: `model` renamed to the canonical ID, or the
 * usage the gateway asked for on the client's behalf (`stream_options.include_usage`) removed again,
 * its usage-only chunk dropped. Otherwise its data text passes unchanged.
 *
 *   chunk                      -> the same chunk (renamed / usage removed when needed)
 *   error record               -> the same record; the stream ends there
 *   [DONE]                     -> [DONE]
 *   unreadable record / lost   -> a chat error record; never [DONE] after a failure
 *
 * A stateful transform created per request; pure (no I/O).
 */
import { convertChatUsageToNative } from './chat-to-native-mapping';
import { formatChatStreamFailure } from './native-to-chat-errors';
import type { SseEvent } from './native-types';
import type { StreamTransform } from './stream-transform';
import { emptyUsage, type Usage } from './usage';

/** What the client gets: a record's data text as the upstream sent it, or a chunk (changed, or an error record). */
export type PassthroughRecord = string | Record<string, unknown>;

export interface PassthroughStreamOptions {
  /** Rename of `model` from the upstream's name to the canonical ID; null when they match. */
  rename: { from: string; to: string } | null;
  /** True when the client did not ask for usage: the usage chunk and `usage` fields are removed. */
  stripUsage: boolean;
}

/**
 * The transform of one passed-through stream. Its failures always go out as records (`error` stays
 * undefined): the upstream's records pass as they are, and so does the stream's head.
 */
export function createPassthroughStreamTransform(options: PassthroughStreamOptions): StreamTransform<PassthroughRecord> {
  const usage: Usage = emptyUsage();
  let stopReason: string | null = null;
  let closed = false;

  const fail = (message: string): PassthroughRecord[] => {
    if (closed) return [];
    closed = true;
    return [formatChatStreamFailure(message) as unknown as Record<string, unknown>];
  };

  function push(event: SseEvent): PassthroughRecord[] {
    if (closed) return [];
    if (event.data === '[DONE]') {
      closed = true;
      return ['[DONE]'];
    }
    let chunk: Record<string, any> | undefined;
    try {
      chunk = JSON.parse(event.data);
    } catch {
      chunk = undefined;
    }
    if (!chunk || typeof chunk !== 'object') return fail('the upstream sent a record that is not JSON');
    let changed = false;
    if (chunk.usage) Object.assign(usage, convertChatUsageToNative(chunk.usage));
    const finishReason = chunk.choices?.[0]?.finish_reason;
    if (finishReason) stopReason = finishReason;
    if (options.stripUsage && 'usage' in chunk) {
      if (Array.isArray(chunk.choices) && chunk.choices.length === 0) return []; // the usage-only chunk
      delete chunk.usage;
      changed = true;
    }
    if (options.rename && chunk.model === options.rename.from) {
      chunk.model = options.rename.to;
      changed = true;
    }
    if (chunk.error) closed = true;
    return [changed ? chunk : event.data];
  }

  return {
    push,
    end: () => fail('the upstream stream ended without [DONE]'),
    fail,
    usage,
    get stopReason() { return stopReason; },
    // The upstream reports its usage (the gateway asks for it); a cut stream settles what it reported.
    streamedCharacters: 0,
    get closed() { return closed; },
    error: undefined,
  };
}
