/**
 * The native route's stream: the upstream's bytes go to the client as they arrive (`relay`), and its
 * events are read on the side for billing (`push` returns nothing): usage from message_start and
 * message_delta (wire-formats.md §3), the stop reason, and the characters of the deltas passed on.
 * When the upstream names the model differently from the catalogue, the bytes up to the end of the
 * first event (message_start) wait until it is whole and go out with `message.model` renamed; every
 * later byte passes unchanged.
 *
 *   bytes                          -> the same bytes (the first event renamed when needed)
 *   message_stop                   -> closed: the reply ends with the chunk that carried it
 *   stream ends after message_stop -> nothing more
 *   ends before it / lost / idle   -> an `error` event (api_error, timeout_error when idle)
 *
 * The usage always holds what was streamed so far: the upstream's figures, and until its final
 * `message_delta` usage, at least an estimate of the output tokens already passed on (so a stream cut
 * short settles what the client received, not message_start's provisional count).
 *
 * A stateful transform created per request; pure (no I/O).
 */
import { deltaTextLength } from './native-layout';
import type { SseEvent } from './native-types';
import type { StreamTransform } from './stream-transform';
import { countDeltaCharacters, emptyUsage, estimateTokens, mergeNativeUsage, type Usage } from './usage';

/** What the client gets: upstream bytes as they are, or the data of the `error` event that ends a broken stream. */
export type NativeRelayRecord = Buffer | { type: 'error'; error: { type: string; message: string } };

/** What `push` returns for every event (the bytes went out with `relay`); shared, never written to. */
const NOTHING: NativeRelayRecord[] = [];

/** Longest first event held back for a rename; past it, the bytes go out as they are. */
const HEAD_LIMIT = 64 * 1024;

/** The transform of one relayed stream; `relay` passes the bytes, `push` reads the events. */
export interface NativeRelayTransform extends StreamTransform<NativeRelayRecord> {
  /** The bytes of one upstream chunk, to write before its events are pushed. */
  relay(chunk: Buffer): NativeRelayRecord[];
  /** A failure outside the stream; `idle` when the stream stalled past the idle limit. */
  fail(message: string, idle?: boolean): NativeRelayRecord[];
}

/** @param rename `model` renamed from the upstream's name to the canonical ID; null when they match */
export function createNativeRelayTransform(rename: { from: string; to: string } | null): NativeRelayTransform {
  const usage: Usage = emptyUsage();
  let streamedCharacters = 0;
  let finalUsageSeen = false;
  let stopReason: string | null = null;
  let complete = false;
  let closed = false;
  let head: Buffer | null = rename ? Buffer.alloc(0) : null;

  const takeHead = (): NativeRelayRecord[] => {
    const held = head;
    head = null;
    return held !== null && held.length > 0 ? [held] : [];
  };
  const close = (type: string, message: string): NativeRelayRecord[] => {
    if (closed) return [];
    closed = true;
    return [...takeHead(), { type: 'error', error: { type, message } }];
  };

  return {
    relay(chunk) {
      if (closed) return [];
      if (head === null) return [chunk];
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\n\n');
      if (end === -1 && head.length < HEAD_LIMIT) return [];
      const cut = end === -1 ? head.length : end + 2;
      const first = Buffer.from(renameInFirstEvent(head.subarray(0, cut).toString('utf8'), rename!));
      const rest = head.subarray(cut);
      head = null;
      return [rest.length > 0 ? Buffer.concat([first, rest]) : first];
    },
    push(event: SseEvent) {
      // The API sends nothing after message_stop: the reply ends with the chunk that carried it.
      if (event.event === 'message_stop') complete = closed = true;
      if (event.event === 'content_block_delta') {
        streamedCharacters += deltaCharacters(event.data);
      } else if (event.event === 'message_start' || event.event === 'message_delta') {
        const data = parse(event.data) as any;
        mergeNativeUsage(usage, event.event === 'message_start' ? data?.message?.usage : data?.usage);
        if (event.event === 'message_delta' && typeof data?.usage?.output_tokens === 'number') finalUsageSeen = true;
        if (event.event === 'message_delta' && data?.delta?.stop_reason !== undefined) stopReason = data.delta.stop_reason;
      }
      if (!finalUsageSeen) usage.output_tokens = Math.max(usage.output_tokens, estimateTokens(streamedCharacters));
      return NOTHING;
    },
    end() {
      if (!complete) return close('api_error', 'the upstream stream ended before the reply was complete');
      closed = true;
      return takeHead();
    },
    fail: (message, idle = false) => close(idle ? 'timeout_error' : 'api_error', message),
    usage,
    get stopReason() { return stopReason; },
    get streamedCharacters() { return streamedCharacters; },
    get closed() { return closed; },
    // The head went out with the upstream's status before the first byte: a failure is an event.
    error: undefined,
  };
}

/**
 * The characters of generated text a content_block_delta's data carries, as countDeltaCharacters
 * counts them on the parsed data: read off the data in the API's layout (native-layout.ts), else parsed.
 */
export function deltaCharacters(data: string): number {
  const length = deltaTextLength(data);
  return length !== -1 ? length : countDeltaCharacters(parse(data));
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Rewrite `message.model` in a message_start event's data line; any other text is returned as is. */
function renameInFirstEvent(text: string, rename: { from: string; to: string }): string {
  return text.replace(/^data: ?(.*)$/m, (line, json: string) => {
    const data = parse(json) as any;
    if (data?.type !== 'message_start' || data.message?.model !== rename.from) return line;
    data.message.model = rename.to;
    return `data: ${JSON.stringify(data)}`;
  });
}
