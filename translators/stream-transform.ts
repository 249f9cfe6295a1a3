/**
 * The shape every transform of an upstream stream has (native-relay-stream.ts, native-to-chat-stream.ts,
 * responses-stream.ts, which extend stream-base.ts; chat-to-native-stream.ts, chat-passthrough-stream.ts):
 * SSE events in, records of the client's format out, and what it has learnt of the reply so far. The
 * gateway relays any of them the same way (routes/reply.ts).
 */
import type { SseEvent } from './native-types';
import type { Usage } from './usage';

/**
 * A whole reply in the client's format, written before any byte of a stream went out: an error
 * (status, headers, body) or a non-streamed reply. A string or Buffer body is written as it is,
 * anything else as JSON. `B` narrows the body where it is known (a translated error's
 * `WholeReply<ChatErrorBody>`, native-to-chat-errors.ts).
 */
export interface WholeReply<B = unknown> {
  /** HTTP status for the client. */
  status: number;
  /** Reply headers, over those already set. */
  headers: Record<string, string | string[]>;
  body: B;
}

export interface StreamTransform<R> {
  /** Translate one upstream event; returns the records to write now, in order. */
  push(event: SseEvent): R[];
  /**
   * The upstream stream ended: nothing when the reply was complete, else the records of a failure
   * (never the ones of a completed reply), so the client sees a failure rather than a truncated stream.
   */
  end(): R[];
  /**
   * A failure outside the stream (connection lost, or `idle`: stalled past the idle limit): the
   * failure records, once.
   */
  fail(message: string, idle?: boolean): R[];
  /**
   * A relaying transform only (the native route): the records for the bytes of one upstream chunk,
   * written before its events are pushed (which then only read them).
   */
  relay?(chunk: Buffer): R[];
  /** Billing counts so far (message_start, then message_delta's cumulative fields). */
  readonly usage: Usage;
  /** Stop reason from message_delta, once seen. */
  readonly stopReason: string | null;
  /** Characters of generated text and arguments sent so far (a floor for output tokens of a cut stream). */
  readonly streamedCharacters: number;
  /**
   * Raise `usage.output_tokens` to the estimate of `streamedCharacters` until the final usage came (the
   * output-token floor, stream-base.ts); absent where nothing is counted (pass-through, reverse).
   */
  floorOutputTokens?(): void;
  /** True once the records that end the stream (completed or failed) were produced. */
  readonly closed: boolean;
  /**
   * The error that closed the stream, as the HTTP error it stands for (used when nothing was sent
   * yet); undefined for a transform whose failures always go out as records (pass-through).
   */
  readonly error: WholeReply | undefined;
}
