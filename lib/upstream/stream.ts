/**
 * Following an upstream SSE reply as it arrives: parsing it (eventsource-parser, lib/sse.ts) and
 * reporting its end, loss or idle timeout once; and relaying a native stream through a translator's
 * transform (the chat and Responses routes).
 */
import type http from 'node:http';
import type { Response } from 'express';
import { getContext } from '../context';
import { createSseDecoder, type SseEvent } from '../sse';
import { createStreamWriter, openSseReply, recordReply, sendJsonReply } from './exchange';
import type { StreamTransform } from '../../translators/stream-transform';
import { estimateTokens } from '../../translators/usage';

export interface UpstreamStreamHandlers {
  /** The bytes of one upstream chunk, before its events are parsed (the native proxy passes them on). */
  onChunk?(chunk: Buffer): void;
  /** One parsed SSE event, in the tick it was parsed. */
  onEvent(event: SseEvent): void;
  /** The events of one upstream chunk have all been reported, in the same tick ({@link StreamWriter}'s `flush`). */
  onChunkParsed?(): void;
  /** The upstream ended its reply normally. */
  onEnd(): void;
  /** The connection was lost, or the stream went idle (`idle` true). Called at most once. */
  onLost(message: string, idle: boolean): void;
}

/** Parse an upstream SSE reply as it arrives and report its end, loss or idle timeout once. */
export function followUpstreamStream(response: http.IncomingMessage, handlers: UpstreamStreamHandlers): void {
  let settled = false;
  const decoder = createSseDecoder(handlers.onEvent);
  response.on('data', (chunk: Buffer) => {
    handlers.onChunk?.(chunk);
    decoder.write(chunk);
    handlers.onChunkParsed?.();
  });
  response.once('end', () => {
    decoder.end();
    if (settled) return;
    settled = true;
    handlers.onEnd();
  });
  const lost = (message: string, idle = false) => {
    if (settled) return;
    settled = true;
    handlers.onLost(message, idle);
  };
  // A reset socket emits `error` then `close` without `end`; an idle stream is destroyed with UPSTREAM_IDLE.
  response.once('error', (err: NodeJS.ErrnoException) =>
    err.code === 'UPSTREAM_IDLE' ? lost(err.message, true) : lost('the upstream connection was lost mid-stream'));
  response.once('close', () => lost('the upstream connection was lost mid-stream'));
}

/**
 * Relay a native upstream stream through a translator's transform, writing each upstream chunk's
 * records in the tick it was parsed. Headers go out with the first records, so an upstream error
 * before any output still becomes a real HTTP status in the route's error shape; after the first
 * byte the transform's own error records say it. Usage and stop reason are recorded as they come.
 * @param format one record as SSE text
 * @param beforeClose called with the records that end the stream; they are written once it resolves
 *   (the Responses route stores the response first). It must not reject.
 */
export function relayTranslatedStream<R>(
  response: http.IncomingMessage,
  res: Response,
  transform: StreamTransform<R>,
  format: (record: R) => string,
  beforeClose?: (records: R[]) => Promise<void> | void,
): void {
  const ctx = getContext(res);
  recordReply(ctx, { usage: transform.usage });
  const out = createStreamWriter(res);
  const send = (records: R[]) => {
    for (const record of records) out.add(format(record));
    if (transform.closed) out.end();
  };
  const write = (records: R[]) => {
    if (records.length === 0 || res.writableEnded || res.destroyed) return;
    if (!res.headersSent && transform.error) {
      for (const [name, value] of Object.entries(transform.error.headers)) res.setHeader(name, value);
      sendJsonReply(res, transform.error.status, transform.error.body);
      return;
    }
    openSseReply(res);
    // Until message_delta brings the final count, usage is at least what the client has received,
    // so a stream cut short settles what was streamed rather than message_start's provisional count.
    if (transform.stopReason === null) {
      transform.usage.output_tokens = Math.max(transform.usage.output_tokens, estimateTokens(transform.streamedCharacters));
    }
    const waitFor = transform.closed ? beforeClose?.(records) : undefined;
    if (waitFor) void waitFor.then(() => send(records));
    else send(records);
  };
  followUpstreamStream(response, {
    onEvent(event) {
      write(transform.push(event));
      recordReply(ctx, { stopReason: transform.stopReason });
    },
    onChunkParsed: out.flush,
    onEnd: () => write(transform.end()),
    onLost: (message) => write(transform.fail(message)),
  });
}
