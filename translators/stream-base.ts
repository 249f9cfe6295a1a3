/**
 * The one base of the transforms that read a native stream (wire-formats.md §3): the native relay
 * (native-relay-stream.ts), chat (native-to-chat-stream.ts) and Responses (responses-stream.ts) extend
 * it and write only what their client's format needs, one handler per event type. What they share is
 * here, once:
 *
 * - **parse**: each event's data is read once, a `content_block_delta` in the API's layout without a
 *   full parse (native-layout.ts `readDeltaEvent`), any other by `JSON.parse`; an event type without a
 *   handler (`ping`, types added later) is skipped unread;
 * - **a broken stream**: an unreadable event, a stream that ends before the reply was complete, a
 *   connection lost or idle past the limit close the stream with the transform's failure records;
 * - **close**: the records that end a stream (completed or failed) are produced once; after them the
 *   transform produces nothing;
 * - **the output-token floor** ({@link StreamTransformBase.floorOutputTokens}): until the upstream's final
 *   usage (`message_delta` with `output_tokens`) has come, `usage.output_tokens` is at least the estimate
 *   of the characters streamed so far, so a stream cut short settles what the client received, not
 *   message_start's provisional count. The relay (routes/reply.ts) applies it after each upstream chunk's
 *   events, so the records a transform makes (a Responses `response.failed`'s usage) carry the floor of
 *   the chunks before.
 *
 * Pure (no I/O); one instance per streamed reply.
 */
import type { SseEvent } from './native-types';
import { readDeltaEvent } from './native-layout';
import type { StreamTransform, WholeReply } from './stream-transform';
import { emptyUsage, estimateTokens, mergeNativeUsage, type Usage } from './usage';

/** Returned where an event yields no record; shared, so frozen. */
export const NO_RECORDS = Object.freeze([]) as unknown as never[];

/** What {@link StreamTransformBase.read} returns for data that is not JSON. */
export const UNREADABLE = Symbol('unreadable');

/** The handler of one event type: its data as read, the records to write now. */
export type EventHandler<R> = (data: any) => R[];

/**
 * A table of event handlers without a prototype: an upstream event named after a member of every object
 * (`constructor`, `toString`, `__proto__`) finds no handler and is skipped, as any unknown type is.
 */
export function eventHandlers<R>(handlers: Record<string, EventHandler<R>>): Readonly<Record<string, EventHandler<R> | undefined>> {
  return Object.assign(Object.create(null) as Record<string, EventHandler<R>>, handlers);
}

export abstract class StreamTransformBase<R> implements StreamTransform<R> {
  /** Billing counts so far (message_start, then message_delta's cumulative fields, floored as above). */
  readonly usage: Usage = emptyUsage();
  /** Stop reason from message_delta, once seen. */
  stopReason: string | null = null;
  /** Characters of generated text and arguments sent so far (the floor's measure). */
  streamedCharacters = 0;
  /** True once the records that end the stream (completed or failed) were produced. */
  closed = false;
  /** The error that closed the stream, as the HTTP error it stands for (undefined: failures go out as records). */
  error: WholeReply | undefined = undefined;
  /** Whether message_delta's final `output_tokens` has come: the floor no longer applies. */
  private finalUsageSeen = false;

  /** The handlers of the event types the transform reads, by event name (made by {@link eventHandlers}); the others are skipped. */
  protected abstract readonly handlers: Readonly<Record<string, EventHandler<R> | undefined>>;

  /**
   * The records that end a broken stream (an unreadable event, a stream ended short, a connection lost;
   * `idle`: stalled past the idle limit), called once, with `closed` already set.
   */
  protected abstract failure(message: string, idle: boolean): R[];

  push(event: SseEvent): R[] {
    if (this.closed) return NO_RECORDS;
    const name = event.event ?? 'message';
    const handler = this.handlers[name];
    if (handler === undefined) return NO_RECORDS;
    const data = this.read(name, event.data);
    return data === UNREADABLE ? this.unreadable(name) : handler(data);
  }

  floorOutputTokens(): void {
    if (!this.finalUsageSeen) this.usage.output_tokens = Math.max(this.usage.output_tokens, estimateTokens(this.streamedCharacters));
  }

  end(): R[] {
    return this.closed ? this.ended() : this.broken('the upstream stream ended before the reply was complete');
  }

  fail(message: string, idle = false): R[] {
    return this.broken(message, idle);
  }

  /**
   * An event's data as its handler takes it: a delta in the API's layout read off its text, anything
   * else parsed; {@link UNREADABLE} when it is not JSON.
   */
  protected read(name: string, text: string): unknown {
    const delta = name === 'content_block_delta' ? readDeltaEvent(text) : undefined;
    if (delta !== undefined) return delta;
    try {
      return JSON.parse(text);
    } catch {
      return UNREADABLE;
    }
  }

  /** An event whose data is not JSON: the stream is broken. */
  protected unreadable(name: string): R[] {
    return this.broken(`the upstream sent an unreadable ${name} event`);
  }

  /** What the upstream's end gives once the stream was closed: nothing unless the transform holds bytes back. */
  protected ended(): R[] {
    return NO_RECORDS;
  }

  /**
   * Merge a message_start's or message_delta's usage (wire-formats.md §3); `final`: message_delta's,
   * whose `output_tokens`, once present, ends the floor.
   */
  protected mergeUsage(reported: unknown, final: boolean): void {
    mergeNativeUsage(this.usage, reported as Parameters<typeof mergeNativeUsage>[1]);
    if (final && typeof (reported as { output_tokens?: unknown } | null)?.output_tokens === 'number') this.finalUsageSeen = true;
  }

  /** Close the stream with the records `make` gives, once: nothing when it is closed already. */
  protected closeWith(make: () => R[]): R[] {
    if (this.closed) return NO_RECORDS;
    this.closed = true;
    return make();
  }

  /** Close a broken stream with the transform's failure records, once. */
  protected broken(message: string, idle = false): R[] {
    return this.closeWith(() => this.failure(message, idle));
  }
}
