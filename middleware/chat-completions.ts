/**
 * The translator route: a chat-completions request is converted to a native request, sent upstream,
 * and the reply converted back: a `chat.completion`, or `chat.completion.chunk` records as each
 * upstream event is parsed (no batching, no sleeps), ending with `data: [DONE]`, or with an error
 * record when the reply did not complete.
 */
import type http from 'node:http';
import type { RequestHandler, Response } from 'express';
import type { Catalogue } from '../lib/catalogue';
import { emptyUsage, getContext, type RequestContext } from '../lib/context';
import { errors, GatewayError } from '../lib/errors';
import type { Logger } from '../lib/logger';
import { readBody, tryParseJson } from '../lib/read-body';
import { createSseDecoder, formatSse } from '../lib/sse';
import type { UpstreamClient, UpstreamReply } from '../lib/upstream';
import { convertChatRequest } from '../translators/chat-request';
import { convertNativeResponse } from '../translators/chat-response';
import { createChatStreamTransform, type ChatStreamRecord } from '../translators/chat-stream';
import type { ChatCompletionRequest } from '../translators/chat-types';
import { mapNativeErrorToChat } from '../translators/errors';
import type { NativeMessage } from '../translators/native-types';
import { mergeNativeUsage } from '../translators/usage';

export interface ChatCompletionsOptions {
  upstream: UpstreamClient;
  catalogue: Catalogue;
  logger: Logger;
}

/** The native API version the translator speaks upstream. */
const UPSTREAM_VERSION = '2023-06-01';

export function createChatCompletions(options: ChatCompletionsOptions): RequestHandler {
  const { upstream, catalogue, logger } = options;
  const unknownStopReasons = new Set<string>();
  const onUnknownStopReason = (value: string) => {
    if (unknownStopReasons.has(value)) return;
    unknownStopReasons.add(value);
    logger.warn({ message: 'unknown stop reason mapped to finish_reason "stop"', stop_reason: value });
  };

  return async (req, res, next) => {
    const ctx = getContext(res);
    let reply: UpstreamReply | undefined;
    // Cancels the attempt under way and any retry wait when the client goes away.
    const clientGone = new AbortController();
    res.once('close', () => {
      if (res.writableFinished) return;
      clientGone.abort();
      reply?.abort();
    });
    try {
      const body = req.body as ChatCompletionRequest;
      const model = ctx.model!;
      const { request, warnings } = convertChatRequest(body, {
        upstreamModel: model.upstreamModel,
        defaultMaxTokens: catalogue.defaultMaxTokens(model),
      });
      ctx.warnings.push(...warnings);
      if (ctx.warnings.length > 0) res.setHeader('x-gateway-warning', ctx.warnings.join('; '));
      reply = await upstream.send({
        path: '/v1/messages',
        headers: { 'anthropic-version': UPSTREAM_VERSION, accept: ctx.stream ? 'text/event-stream' : 'application/json' },
        body: Buffer.from(JSON.stringify(request)),
        signal: clientGone.signal,
      });
      if (res.destroyed) return reply.abort();
      const { response } = reply;
      ctx.upstreamStatus = response.statusCode;
      const created = Math.floor(Date.now() / 1000);
      if (response.statusCode !== 200) return await sendUpstreamError(response, res, upstream.redact);
      if (ctx.stream) return streamReply(response, res, ctx, created, body, onUnknownStopReason);
      const message = tryParseJson((await readBody(response)).toString('utf8')) as NativeMessage | undefined;
      if (!message || typeof message !== 'object' || !Array.isArray(message.content)) {
        throw errors.upstreamUnreachable('the upstream sent a reply that is not a message');
      }
      ctx.usage = mergeNativeUsage(emptyUsage(), message.usage);
      ctx.stopReason = message.stop_reason;
      const completion = convertNativeResponse(message, { model: model.id, created, onUnknownStopReason });
      res.status(200).json(completion);
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      next(err instanceof GatewayError ? err : errors.upstreamUnreachable(`the upstream reply could not be read: ${(err as Error).message}`));
    }
  };
}

/** An upstream error before any byte was sent: the same status, in the chat error shape. */
async function sendUpstreamError(response: http.IncomingMessage, res: Response, redact: (text: string) => string): Promise<void> {
  // The upstream may quote the gateway's own credential back (a 401 naming the key): never relay it.
  const raw = redact((await readBody(response, 1024 * 1024)).toString('utf8'));
  const translated = mapNativeErrorToChat(response.statusCode ?? 502, tryParseJson(raw));
  const retryAfter = response.headers['retry-after'];
  if (typeof retryAfter === 'string') res.setHeader('retry-after', retryAfter);
  for (const [name, value] of Object.entries(translated.headers)) res.setHeader(name, value);
  res.status(translated.status).json(translated.body);
}

/**
 * Translate the upstream SSE stream record by record, writing each event's records in the tick the
 * event was parsed. Headers go out with the first record, so an upstream `error` event (or a lost
 * connection) before any output still becomes a real HTTP status in the chat error shape; after the
 * first byte it becomes a `data: {"error": ...}` record and the stream ends without `[DONE]`.
 */
function streamReply(
  response: http.IncomingMessage,
  res: Response,
  ctx: RequestContext,
  created: number,
  body: ChatCompletionRequest,
  onUnknownStopReason: (value: string) => void,
): void {
  const transform = createChatStreamTransform({
    model: ctx.model!.id,
    created,
    includeUsage: body.stream_options?.include_usage === true,
    onUnknownStopReason,
  });
  ctx.usage = transform.usage;

  const write = (records: ChatStreamRecord[]) => {
    if (records.length === 0 || res.writableEnded || res.destroyed) return;
    if (!res.headersSent) {
      if (transform.error && records.length === 1) {
        for (const [name, value] of Object.entries(transform.error.headers)) res.setHeader(name, value);
        res.status(transform.error.status).json(transform.error.body);
        return;
      }
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      });
      ctx.firstByteMs = Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    }
    let out = '';
    for (const record of records) {
      out += formatSse(record);
      streamedCharacters += countStreamedCharacters(record);
    }
    // Until message_delta brings the final count, usage is at least what the client has received,
    // so a stream cut short settles what was streamed rather than message_start's provisional count.
    if (transform.stopReason === null) {
      transform.usage.output_tokens = Math.max(transform.usage.output_tokens, Math.ceil(streamedCharacters / 4));
    }
    res.write(out);
    if (transform.closed) res.end();
  };
  let streamedCharacters = 0;

  const decoder = createSseDecoder((event) => {
    write(transform.push(event));
    ctx.stopReason = transform.stopReason;
  });
  response.on('data', (chunk: Buffer) => decoder.write(chunk));
  response.once('end', () => {
    decoder.end();
    write(transform.end());
  });
  // A reset socket emits `error` then `close` without `end`; after a normal end the transform is
  // already closed and `fail` adds nothing.
  const lost = () => write(transform.fail('the upstream connection was lost mid-stream'));
  response.once('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'UPSTREAM_IDLE') write(transform.fail(err.message));
    else lost();
  });
  response.once('close', lost);
}

/** Characters of generated text (content and tool-call arguments) in one outgoing record. */
function countStreamedCharacters(record: ChatStreamRecord): number {
  if (typeof record !== 'object' || !('choices' in record)) return 0;
  let count = 0;
  for (const choice of record.choices) {
    const delta = choice.delta as { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> };
    if (typeof delta.content === 'string') count += delta.content.length;
    for (const call of delta.tool_calls ?? []) if (typeof call.function?.arguments === 'string') count += call.function.arguments.length;
  }
  return count;
}
