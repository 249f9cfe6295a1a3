/**
 * The native route's stream: the upstream's bytes go to the client as they arrive (`relay`), and its
 * events are read on the side for billing (`push` returns nothing): usage from message_start and
 * message_delta (wire-formats.md §3), the stop reason, and the characters of the deltas passed on.
 * When the upstream names the model differently from the catalogue, the bytes up to the end of the
 * first event (message_start) wait until it is whole and go out with `message.model` renamed; every
 * later byte passes unchanged.
 *
 *   bytes                          -> the same bytes (the first event renamed when needed)
 *   stream ends after message_stop -> nothing more
 *   ends before it / lost / idle   -> an `error` event (api_error, timeout_error when idle)
 *
 * The usage always holds what was streamed so far: the upstream's figures, and until its final
 * `message_delta` usage, at least an estimate of the output tokens already passed on (so a stream cut
 * short settles what the client received, not message_start's provisional count).
 *
 * A stateful transform created per request; pure (no I/O).
 */
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
      if (event.event === 'message_stop') complete = true;
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

/** A content_block_delta's data as the API writes it, up to its index (docs/wire-formats.md §3). */
const DELTA_HEAD = '{"type":"content_block_delta","index":';
const DELTA_TYPE = ',"delta":{"type":';
/** The delta types that carry generated text, each up to the opening quote of that text. */
const DELTA_TEXT_STARTS = ['"text_delta","text":"', '"input_json_delta","partial_json":"', '"thinking_delta","thinking":"'];

/**
 * The characters of generated text a content_block_delta's data carries, as countDeltaCharacters
 * counts them on the parsed data. Kept for speed: the deltas are most of a stream's events, and for
 * the API's own layout of a text, tool-input or thinking delta the text's length is read off the JSON
 * string without parsing it (a native stream of 200 deltas spent about 130 µs parsing them; RESULTS.md);
 * any other layout is parsed.
 */
export function deltaCharacters(data: string): number {
  if (data.startsWith(DELTA_HEAD) && data.endsWith('"}}')) {
    let at = DELTA_HEAD.length;
    const digits = at;
    while (at < data.length && data.charCodeAt(at) >= 0x30 && data.charCodeAt(at) <= 0x39) at++;
    if (at > digits && data.startsWith(DELTA_TYPE, at)) {
      at += DELTA_TYPE.length;
      const start = DELTA_TEXT_STARTS.find((prefix) => data.startsWith(prefix, at));
      const length = start === undefined ? -1 : jsonStringLength(data, at + start.length, data.length - 3);
      if (length !== -1) return length;
    }
  }
  return countDeltaCharacters(parse(data));
}

/** Characters a JSON escape's letter stands for one of (after the backslash); `u` takes four hex digits. */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);

/**
 * The length (UTF-16 code units, as `String.length`) of the JSON string whose text runs from `from` to
 * `to` (exclusive, between its quotes); -1 when that text is not a valid JSON string's (an unescaped
 * quote or control character, a bad escape).
 */
function jsonStringLength(text: string, from: number, to: number): number {
  let length = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22 || code < 0x20) return -1;
    if (code === 0x5c) {
      const letter = text.charCodeAt(i + 1);
      if (letter === 0x75) {
        if (i + 5 >= to || !/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return -1;
        i += 5;
      } else {
        if (i + 1 >= to || !SIMPLE_ESCAPES.has(letter)) return -1;
        i += 1;
      }
    }
    length++;
  }
  return length;
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
