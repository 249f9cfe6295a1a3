/**
 * Server-sent events: the one place outgoing records are formatted and written (one write per
 * upstream chunk), and the parser of incoming streams (eventsource-parser, which holds for any split
 * of the byte stream).
 */
import type http from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { Response } from 'express';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

import type { SseEvent } from '../../translators/native-types';

export type { SseEvent };

/**
 * Format one outgoing SSE record. With `event`, an `event:` line precedes the data (native streams);
 * without, a bare `data:` record (chat-completions streams). `data` is JSON-encoded unless a string.
 */
export function formatSse(data: unknown, event?: string): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return event === undefined ? `data: ${text}\n\n` : `event: ${event}\ndata: ${text}\n\n`;
}

/**
 * A byte-stream SSE parser: `write(chunk)` as bytes arrive (any split, including inside a multi-byte
 * UTF-8 character); `onEvent` is called synchronously for each complete event.
 */
export function createSseDecoder(onEvent: (event: SseEvent) => void): { write(chunk: Buffer): void; end(): void } {
  const decoder = new StringDecoder('utf8');
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      onEvent({ event: message.event, data: message.data });
    },
  });
  return {
    write(chunk) {
      parser.feed(decoder.write(chunk));
    },
    end() {
      const rest = decoder.end();
      if (rest) parser.feed(rest);
    },
  };
}

/**
 * A streamed reply's output, written once per upstream chunk: what the events of one chunk produce is
 * gathered, then written in one `res.write` when the chunk has been parsed (in the same tick: pass
 * `flush` as `onChunkParsed` of followUpstreamStream, routes/reply.ts), so one upstream chunk is one HTTP chunk
 * to the client. Nothing is written once the response has ended or was destroyed.
 */
export interface StreamWriter {
  /** Gather `data` (SSE records, or the upstream's own bytes) with the rest of the current upstream chunk's output. */
  add(data: string | Buffer): void;
  /** Write what was gathered, in one write; when the client's socket is full, hold the source until it drains. */
  flush(): void;
  /** Write what was gathered and end the reply. */
  end(): void;
}

/**
 * Where a stream's output comes from (the upstream's reply), paused while the client's socket is full
 * so that it is read no faster than the client takes the output.
 */
export interface StreamSource {
  pause(): unknown;
  resume(): unknown;
  /** False while the source's message is still arriving (an upstream reply: `IncomingMessage.complete`). */
  readonly complete?: boolean;
  /**
   * The connection it is read from (an upstream reply's socket), paused with it while the message is
   * incomplete: Node pauses the socket itself only when a push into the paused reply is refused, not when
   * the hold starts as the reply gives out what it had buffered (after a drain), which let the socket
   * feed a further read into the reply.
   */
  readonly socket?: { pause(): unknown; resume(): unknown; readonly destroyed: boolean } | null;
}

/**
 * The writer of one streamed reply. With `source`, backpressure: a write the client's socket cannot
 * take at once (`res.write` returns false: Node's buffer is past its 16 KiB high-water mark) pauses
 * `source`, and its socket while its message is incomplete, until `res` emits `drain` or closes; a
 * client that does not drain within `stallMs` ms is disconnected (`res.destroy()`, which cancels the
 * upstream request as any client leaving does). Both are resumed on close too, so a reply that ended
 * while held is read to its end and its kept-alive socket goes back to the agent flowing: a socket
 * left paused there hangs the next request sent on it. A socket is never paused once its message is
 * complete (Node resumed it then for the next message), so no pause made here outlives its reply.
 * A stalled reader then holds the refused write (16 KiB and the chunk that crossed it) and the rest
 * of the upstream read being parsed: a plain upstream socket reads 32 KiB on demand and stops at once
 * when paused (lib/upstream/target.ts), 33 to 49 KiB measured; an https one 48 KiB
 * (spec/unit/stream-writer.spec.ts; the kernel's socket queues are not the process's memory).
 */
export function createStreamWriter(res: Response, source?: StreamSource, stallMs = Infinity): StreamWriter {
  // Text is joined as text; bytes (a relayed chunk, usually alone) are joined as bytes.
  let pending: string | Buffer = '';
  let held = false;
  const writable = () => !res.writableEnded && !res.destroyed;
  const holdUntilDrained = (from: StreamSource) => {
    held = true;
    from.pause();
    // A complete message's socket is no longer its own: Node resumed it for the next message.
    const socket = from.complete === false ? from.socket : undefined;
    socket?.pause();
    const timer = Number.isFinite(stallMs) ? setTimeout(() => res.destroy(), stallMs) : undefined;
    const release = () => {
      held = false;
      clearTimeout(timer);
      res.off('drain', release);
      res.off('close', release);
      if (socket && !socket.destroyed) socket.resume();
      from.resume();
    };
    res.on('drain', release);
    res.on('close', release);
  };
  return {
    add(data) {
      if (pending.length === 0) pending = data;
      else if (typeof pending === 'string' && typeof data === 'string') pending += data;
      else pending = Buffer.concat([Buffer.from(pending), Buffer.from(data)]);
    },
    flush() {
      // The write's own answer says whether the socket took it: free on the fast path.
      if (pending.length > 0 && writable() && !res.write(pending) && source && !held) holdUntilDrained(source);
      pending = '';
    },
    end() {
      if (writable()) res.end(pending);
      pending = '';
    },
  };
}

/**
 * Write `chunk` to `res`, resolving once the client has taken it (Node's buffer back under its
 * high-water mark: `drain`) or has gone (`close`): what a long export or a test fake's bulk stream
 * writes with, so a slow reader never makes the writer buffer the whole body.
 */
export async function writeWithBackpressure(res: http.ServerResponse, chunk: string | Uint8Array): Promise<void> {
  if (res.write(chunk) || res.destroyed) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
