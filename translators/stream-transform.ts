/**
 * The shape every transform of a native stream has (native-to-chat-stream.ts, responses-stream.ts):
 * events in, records of the client's format out, and what it has learnt of the reply so far.
 * The gateway relays any of them the same way (lib/upstream/stream.ts).
 */
import type { TranslatedError } from './native-to-chat-errors';
import type { SseEvent } from './native-types';
import type { Usage } from './usage';

export interface StreamTransform<R> {
  /** Translate one upstream event; returns the records to write now, in order. */
  push(event: SseEvent): R[];
  /**
   * The upstream stream ended: nothing when the reply was complete, else the records of a failure
   * (never the ones of a completed reply), so the client sees a failure rather than a truncated stream.
   */
  end(): R[];
  /** A failure outside the stream (connection lost, idle timeout): the failure records, once. */
  fail(message: string): R[];
  /** Billing counts so far (message_start, then message_delta's cumulative fields). */
  readonly usage: Usage;
  /** Stop reason from message_delta, once seen. */
  readonly stopReason: string | null;
  /** Characters of generated text and arguments sent so far (a floor for output tokens of a cut stream). */
  readonly streamedCharacters: number;
  /** True once the records that end the stream (completed or failed) were produced. */
  readonly closed: boolean;
  /** The error that closed the stream, as the HTTP error it stands for (used when nothing was sent yet). */
  readonly error: TranslatedError | undefined;
}
