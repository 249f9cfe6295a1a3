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
import { eventHandlers, NO_RECORDS, StreamTransformBase } from './stream-base';
import type { StreamTransform } from './stream-transform';
import { countDeltaCharacters } from './usage';

/** What the client gets: upstream bytes as they are, or the data of the `error` event that ends a broken stream. */
export type NativeRelayRecord = Buffer | { type: 'error'; error: { type: string; message: string } };

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
  return new NativeRelayStream(rename);
}

/**
 * The relay on the stream base: `push` only reads (the bytes went out with `relay`), so it returns
 * nothing; `error` stays undefined (the head went out with the upstream's status before the first
 * byte: a failure is an event).
 */
class NativeRelayStream extends StreamTransformBase<NativeRelayRecord> implements NativeRelayTransform {
  /** The first event's bytes while held for the rename; null once they went out (or without a rename). */
  private head: Buffer | null;

  protected readonly handlers = eventHandlers<NativeRelayRecord>({
    message_start: (data) => {
      this.mergeUsage(data?.message?.usage, false);
      return NO_RECORDS;
    },
    // Read by `read` below: the characters of the delta's text.
    content_block_delta: (characters: number) => {
      this.streamedCharacters += characters;
      return NO_RECORDS;
    },
    message_delta: (data) => {
      this.mergeUsage(data?.usage, true);
      if (data?.delta?.stop_reason !== undefined) this.stopReason = data.delta.stop_reason;
      return NO_RECORDS;
    },
    // The API sends nothing after message_stop: the reply ends with the chunk that carried it.
    message_stop: () => {
      this.closed = true;
      return NO_RECORDS;
    },
  });

  constructor(private readonly rename: { from: string; to: string } | null) {
    super();
    this.head = rename ? Buffer.alloc(0) : null;
  }

  relay(chunk: Buffer): NativeRelayRecord[] {
    if (this.closed) return [];
    if (this.head === null) return [chunk];
    const head = Buffer.concat([this.head, chunk]);
    const end = head.indexOf('\n\n');
    if (end === -1 && head.length < HEAD_LIMIT) {
      this.head = head;
      return [];
    }
    const cut = end === -1 ? head.length : end + 2;
    const first = Buffer.from(renameInFirstEvent(head.subarray(0, cut).toString('utf8'), this.rename!));
    const rest = head.subarray(cut);
    this.head = null;
    return [rest.length > 0 ? Buffer.concat([first, rest]) : first];
  }

  /** A delta's data is only counted (without a full parse in the API's layout); the others as the base reads them. */
  protected override read(name: string, text: string): unknown {
    return name === 'content_block_delta' ? deltaCharacters(text) : super.read(name, text);
  }

  /** An unreadable event went to the client as the upstream sent it; it carries nothing to bill. */
  protected override unreadable(): NativeRelayRecord[] {
    return NO_RECORDS;
  }

  /** The held first event's bytes, if any, then (a broken stream) the `error` event: api_error, timeout_error when idle. */
  protected failure(message: string, idle: boolean): NativeRelayRecord[] {
    return [...this.takeHead(), { type: 'error', error: { type: idle ? 'timeout_error' : 'api_error', message } }];
  }

  protected override ended(): NativeRelayRecord[] {
    return this.takeHead();
  }

  private takeHead(): NativeRelayRecord[] {
    const held = this.head;
    this.head = null;
    return held !== null && held.length > 0 ? [held] : [];
  }
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
