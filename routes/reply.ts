/**
 * The one reply path of every upstream route (native proxy, chat translation, chat pass-through,
 * native via a chat upstream, Responses): convert the request, send it through the upstream client
 * (its one retry loop and error mapping, exchange.ts), then relay or convert the reply: a whole reply
 * through the route's `whole`, a stream through the route's StreamTransform
 * (translators/stream-transform.ts), which converts its records or relays its bytes (native); a whole
 * 200 reply is written at the end of the event loop's turn (lib/http/turn.ts), with the others of that turn. Every
 * reply written before a stream's first byte (the upstream's error in the route's format, a stream's
 * error, a whole reply) is written by one function, {@link sendWholeReply}; the gateway's own errors
 * go to the error handler (middleware/error-handler.ts), which renders them in the route's shape.
 */
import type http from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { getContext, recordReply, type RequestContext } from '../lib/pipeline/context';
import { errors, fromTranslationError, GatewayError } from '../lib/http/errors';
import { sendJson } from '../lib/http/json-reply';
import { readBody, tryParseJson } from '../lib/http/read-body';
import { createStreamWriter } from '../lib/http/sse';
import { endOfTurn } from '../lib/http/turn';
import type { UpstreamReply } from '../lib/upstream/attempt';
import { boundReason, noteLastReason, readErrorReason } from '../lib/upstream/attempt-chain';
import { nativeCloudError, type NativeErrorText } from '../lib/upstream/providers/cloud-errors';
import type { StartAttempt, UpstreamClient, UpstreamRequest } from '../lib/upstream/client';
import { sendForClient } from './exchange';
import { followUpstreamStream } from './reply-reading';
import type { WholeReply, StreamTransform } from '../translators/stream-transform';

export type { WholeReply };
export { followUpstreamStream, modelRenameOf, parseNativeMessage, type ModelRename, type UpstreamStreamHandlers } from './reply-reading';

/** A stream as a route relays it: its transform, and how one record is written (SSE text, or relayed bytes). */
export interface ConvertedStream<R> {
  transform: StreamTransform<R>;
  format(record: R): string | Buffer;
  /**
   * The reply head, written as soon as the stream starts (the native route: the upstream's own
   * headers). Without it the SSE head goes out with the first records, so an error before them can
   * still be a real HTTP status (the transform's `error`).
   */
  headers?: http.OutgoingHttpHeaders;
  /**
   * Called with the records that end a stream; they are written once it resolves (the Responses
   * route stores the response first). It must not reject.
   */
  beforeClose?(records: R[]): Promise<void> | void;
}

/** A converted request: what goes upstream, and what the conversion learnt that the reply needs. */
export interface Converted<S> {
  /** The upstream request, or the attempts a route starts itself. */
  request: UpstreamRequest | StartAttempt;
  state: S;
}

/**
 * What one route does on the reply path; the skeleton ({@link createReplyHandler}) does the rest.
 * `R` is a stream record of the client's format, `S` what `convert` passes to the reply steps.
 */
export interface ReplyRoute<R, S> {
  /**
   * Convert the client's request into the upstream request, setting the reply headers the conversion
   * decides (warnings) on `res`.
   * @throws GatewayError or TranslationError, rendered in the route's shape
   */
  convert(req: Request, res: Response, ctx: RequestContext): Promise<Converted<S>> | Converted<S>;
  /**
   * The upstream's error reply (any status but 200; `text` its body, credentials redacted; `body` that
   * text parsed once, undefined when it is not JSON) in the route's format.
   */
  upstreamError(response: http.IncomingMessage, text: string, ctx: RequestContext, body: unknown): WholeReply;
  /** True when a 200 reply is a stream (default: the client asked for one). */
  isStream?(response: http.IncomingMessage, ctx: RequestContext): boolean;
  /**
   * A whole 200 reply's body (bytes as received) as the client's reply, its usage and stop reason
   * recorded (recordReply).
   * @throws GatewayError 502 when the body is not the reply the upstream's API sends
   */
  whole(body: Buffer, response: http.IncomingMessage, ctx: RequestContext, state: S): Promise<WholeReply> | WholeReply;
  /** A stream's transform: converting it record by record, or relaying its bytes (the native route). */
  stream(response: http.IncomingMessage, ctx: RequestContext, state: S): ConvertedStream<R>;
}

/**
 * The request handler of an upstream route: `route.convert`, send through `upstream`, then the
 * upstream's error, a redirect (never followed: a 502), a stream or a whole reply. A failure before
 * the reply head becomes an error response in the route's shape; after it, the connection is closed.
 */
export function createReplyHandler<R, S>(upstream: UpstreamClient, route: ReplyRoute<R, S>): RequestHandler {
  return async (req, res, next) => {
    const ctx = getContext(res);
    try {
      const { request, state } = await route.convert(req, res, ctx);
      const reply = await sendForClient(res, upstream, request);
      if (!reply) return;
      const { response } = reply;
      const status = response.statusCode ?? 502;
      if (status >= 300 && status < 400) {
        // The APIs never redirect; a redirect's Location would point the client at the upstream itself.
        response.resume();
        throw errors.upstreamUnreachable(`the upstream answered ${status} (a redirect), which the gateway does not follow`);
      }
      if (status !== 200) {
        const error = await readUpstreamError(reply, upstream);
        return sendUpstreamError(res, response, error, route.upstreamError(response, error.text, ctx, error.body));
      }
      if (route.isStream ? route.isStream(response, ctx) : ctx.stream) {
        relayStream(response, res, route.stream(response, ctx, state), upstream.streamIdleTimeoutMs);
        // A client gone before the head (exchange.ts): the stream is read to its end (or its idle limit)
        // for its usage, and the settlement waits for this handler (ctx.upstreamDone).
        if (res.destroyed && !response.destroyed) await new Promise((resolve) => response.once('close', resolve));
        return;
      }
      const whole = await route.whole(await readBody(response), response, ctx, state);
      // Its usage is on the context already: a client that leaves during the wait is still billed.
      await endOfTurn();
      sendWholeReply(res, whole);
    } catch (err) {
      failExchange(err, res, next);
    }
  };
}

/**
 * Write the upstream's error reply as the route converted it (`text`: the upstream's body, redacted),
 * noting its reason (the upstream's error type and message) on the context. A reply relayed with the upstream's status keeps the upstream's
 * reason phrase (Node knows none for 529, say, and would write `unknown`).
 */
function sendUpstreamError(res: Response, response: http.IncomingMessage, error: NativeErrorText, reply: WholeReply): void {
  const ctx = getContext(res);
  ctx.error = readErrorReason(error.text, error.body) ?? { type: 'upstream_error', message: `the upstream answered ${response.statusCode} without an error body` };
  noteLastReason(ctx, ctx.error);
  if (reply.status === response.statusCode && response.statusMessage) res.statusMessage = response.statusMessage;
  sendWholeReply(res, reply);
}

/** True when a reply is an SSE stream, by its content type. */
export function isEventStream(response: http.IncomingMessage): boolean {
  return String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
}

/**
 * Write a whole reply (an error or a non-streamed reply) in one go, recording the time to first byte:
 * `reply.headers` over those already set on `res`; a string or Buffer body as it is (with its length),
 * any other body as JSON (lib/http/json-reply.ts `sendJson`, the one JSON reply writer).
 * @throws TypeError when a JSON body cannot be serialised, as `JSON.stringify` does
 */
export function sendWholeReply(res: Response, reply: WholeReply): void {
  for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  if (typeof reply.body !== 'string' && !Buffer.isBuffer(reply.body)) {
    sendJson(res, reply.status, reply.body);
    recordReply(getContext(res), { firstByte: true });
    return;
  }
  const bytes = typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
  writeReplyHead(res, reply.status, { 'content-length': String(bytes.length) });
  res.end(bytes);
}

/** Write the reply head (status and headers) and record the time to first byte. */
export function writeReplyHead(res: Response, status: number, headers: http.OutgoingHttpHeaders): void {
  res.writeHead(status, headers);
  recordReply(getContext(res), { firstByte: true });
}

/** Send the SSE reply head if it has not gone yet. */
function openSseReply(res: Response): void {
  if (res.headersSent) return;
  writeReplyHead(res, 200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', connection: 'keep-alive' });
}

/**
 * Relay an upstream stream through a route's transform, writing each upstream chunk's records (its
 * bytes first, for a relaying transform) in the tick it was parsed. Without `stream.headers` the head
 * goes out with the first records, so an error before any output (the transform's `error`) still
 * becomes a real HTTP status in the route's error shape; after the first byte the transform's own
 * error records say it. Usage and stop reason are recorded as they come, the usage raised to what was
 * streamed after each upstream chunk's events (the transform's output-token floor,
 * translators/stream-base.ts), so a client that leaves mid-stream is billed what it received; the reply ends with the
 * write of the records that end the stream (once `beforeClose` has resolved), or when the upstream's
 * does: the native relay closes at message_stop, so its reply ends with that chunk's bytes, even if
 * the upstream is slow to end its own. The upstream is read no faster than the client takes the reply
 * (lib/http/sse.ts): `response` is paused while the client's socket is full; a client that takes nothing
 * for `stallMs` ms (the upstream's stream idle limit) is disconnected.
 */
export function relayStream<R>(response: http.IncomingMessage, res: Response, stream: ConvertedStream<R>, stallMs: number): void {
  const { transform, format, beforeClose } = stream;
  const ctx = getContext(res);
  recordReply(ctx, { usage: transform.usage });
  if (stream.headers) writeReplyHead(res, 200, stream.headers);
  const out = createStreamWriter(res, response, stallMs);
  let closing = false;
  const send = (records: R[]) => {
    for (const record of records) out.add(format(record));
    if (transform.closed) out.end();
  };
  const write = (records: R[]) => {
    if (records.length === 0 || res.writableEnded || res.destroyed) return;
    if (!res.headersSent && transform.error) return sendWholeReply(res, transform.error);
    openSseReply(res);
    const waitFor = transform.closed && !closing ? beforeClose?.(records) : undefined;
    if (!waitFor) return send(records);
    closing = true;
    void waitFor.then(() => send(records));
  };
  // The upstream's reply is over: what ends the stream goes out, and the reply ends (unless it waits for beforeClose).
  const finish = (records: R[]) => {
    write(records);
    if (!closing && res.headersSent) out.end();
  };
  followUpstreamStream(response, {
    onChunk: transform.relay ? (chunk) => write(transform.relay!(chunk)) : undefined,
    onEvent(event) {
      // The upstream's own error event (overloaded mid-stream, say): the log line and the record say it.
      if (event.event === 'error') ctx.error = readErrorReason(event.data) ?? ctx.error;
      write(transform.push(event));
      if (transform.stopReason !== ctx.stopReason) recordReply(ctx, { stopReason: transform.stopReason });
    },
    // Usage is at least what the client received (the output-token floor), then a transform closed by
    // this chunk's events ends the reply in the same write (the relay's message_stop).
    onChunkParsed() {
      transform.floorOutputTokens?.();
      if (transform.closed && !closing) out.end();
      else out.flush();
    },
    onEnd: () => finish(transform.end()),
    onLost(message, idle) {
      ctx.error = { type: idle ? 'timeout_error' : 'api_error', message: boundReason(message) };
      finish(transform.fail(message, idle));
    },
  });
}

/** Largest upstream error body read (they are small JSON objects). */
const ERROR_BODY_LIMIT = 1024 * 1024;

/**
 * The body of an upstream error reply, with every upstream credential replaced by `[redacted]`: an
 * upstream may quote the gateway's own key back, and it must never reach a client. A cloud target's
 * error is given in the native shape.
 * @returns the body's text and that text parsed (undefined when it is not JSON): the one parse of the
 *   error path, which the route and the log line's reason read
 */
export async function readUpstreamError({ response, provider }: UpstreamReply, upstream: UpstreamClient): Promise<NativeErrorText> {
  const text = upstream.redact((await readBody(response, ERROR_BODY_LIMIT)).toString('utf8'));
  const body = tryParseJson(text);
  // A cloud's error in the native shape, its wording kept (lib/upstream/providers/cloud-errors.ts).
  return provider === undefined ? { text, body } : nativeCloudError(provider, response.statusCode ?? 502, response.headers, text, body);
}

/**
 * A failure during an exchange: before the reply head it becomes an error response through the error
 * handler (a GatewayError as it is, a stack overflow a 400: only a request nested too deeply to
 * convert or serialise causes one, an idle reply body a 504, anything else a 502); after it, the
 * connection is closed, since the status is already sent.
 */
export function failExchange(err: unknown, res: Response, next: NextFunction): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof GatewayError) return next(err);
  const translated = fromTranslationError(err);
  if (translated) return next(translated);
  if ((err as NodeJS.ErrnoException).code === 'UPSTREAM_IDLE') return next(errors.upstreamTimeout('the upstream reply stalled'));
  if (err instanceof RangeError && /call stack/i.test(err.message)) return next(errors.invalidRequest('request body is nested too deeply'));
  next(errors.upstreamUnreachable(`the upstream reply could not be read: ${(err as Error).message}`));
}
