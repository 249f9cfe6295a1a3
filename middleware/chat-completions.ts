/**
 * The translator route: a chat-completions request is converted to a native request, sent upstream,
 * and the reply converted back: a `chat.completion`, or `chat.completion.chunk` records as each
 * upstream event is parsed (written in the tick the upstream chunk holding it was parsed, with the
 * other events of that chunk; no timers, no sleeps), ending with `data: [DONE]`, or with an error
 * record when the reply did not complete.
 */
import type http from 'node:http';
import type { RequestHandler, Response } from 'express';
import type { Catalogue } from '../lib/catalogue';
import { getContext, type RequestContext } from '../lib/context';
import type { Logger } from '../lib/logger';
import { formatSse } from '../lib/sse';
import type { UpstreamClient } from '../lib/upstream';
import {
  createStreamWriter, failExchange, followUpstreamStream, openSseReply, readNativeMessage, recordReply, sendNativeRequest, sendJsonReply,
  sendNativeErrorInChatShape,
} from '../lib/upstream-exchange';
import { convertChatRequest } from '../translators/chat-to-native-request';
import { convertNativeResponse } from '../translators/native-to-chat-response';
import { createChatStreamTransform, type ChatStreamRecord } from '../translators/native-to-chat-stream';
import type { ChatCompletionRequest } from '../translators/chat-types';
import type { NativeMessage } from '../translators/native-types';
import { estimateTokens } from '../translators/usage';

export interface ChatCompletionsOptions {
  upstream: UpstreamClient;
  catalogue: Catalogue;
  logger: Logger;
}

export function createChatCompletions(options: ChatCompletionsOptions): RequestHandler {
  const { upstream, catalogue, logger } = options;
  const unknownStopReasons = new Set<string>();
  const warnUnknownStopReason = (requestId: string, value: string) => {
    if (unknownStopReasons.has(value)) return;
    unknownStopReasons.add(value);
    logger.warn({ message: 'unknown stop reason mapped to finish_reason "stop"', request_id: requestId, stop_reason: value });
  };

  return async (req, res, next) => {
    const ctx = getContext(res);
    const onUnknownStopReason = (value: string) => warnUnknownStopReason(ctx.requestId, value);
    try {
      const body = req.body as ChatCompletionRequest;
      const model = ctx.model!;
      const { request, warnings } = convertChatRequest(body, {
        upstreamModel: model.upstreamModel,
        defaultMaxTokens: catalogue.defaultMaxTokens(model),
      });
      ctx.warnings.push(...warnings);
      if (ctx.warnings.length > 0) res.setHeader('x-gateway-warning', ctx.warnings.join('; '));
      const reply = await sendNativeRequest(res, upstream, request);
      if (!reply) return;
      const { response } = reply;
      const created = Math.floor(Date.now() / 1000);
      if (response.statusCode !== 200) return await sendNativeErrorInChatShape(response, res, upstream);
      if (ctx.stream) return streamReply(response, res, ctx, created, body, onUnknownStopReason);
      const message = await readNativeMessage<NativeMessage>(response, ctx);
      const completion = convertNativeResponse(message, { model: model.id, created, onUnknownStopReason });
      sendJsonReply(res, 200, completion);
    } catch (err) {
      failExchange(err, res, next);
    }
  };
}

/**
 * Translate the upstream SSE stream record by record, writing each event's records in the tick the
 * event was parsed (one write for the events of one upstream chunk). Headers go out with the first
 * record, so an upstream `error` event (or a lost connection) before any output still becomes a real
 * HTTP status in the chat error shape; after the first byte it becomes a `data: {"error": ...}` record
 * and the stream ends without `[DONE]`.
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
  recordReply(ctx, { usage: transform.usage });

  let streamedCharacters = 0;
  const out = createStreamWriter(res);
  const write = (records: ChatStreamRecord[]) => {
    if (records.length === 0 || res.writableEnded || res.destroyed) return;
    if (!res.headersSent && transform.error && records.length === 1) {
      for (const [name, value] of Object.entries(transform.error.headers)) res.setHeader(name, value);
      sendJsonReply(res, transform.error.status, transform.error.body);
      return;
    }
    openSseReply(res);
    for (const record of records) {
      out.add(formatSse(record));
      streamedCharacters += countStreamedCharacters(record);
    }
    // Until message_delta brings the final count, usage is at least what the client has received,
    // so a stream cut short settles what was streamed rather than message_start's provisional count.
    if (transform.stopReason === null) {
      transform.usage.output_tokens = Math.max(transform.usage.output_tokens, estimateTokens(streamedCharacters));
    }
    if (transform.closed) out.end();
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

/** Characters of generated text (content and tool-call arguments) in one outgoing record. */
function countStreamedCharacters(record: ChatStreamRecord): number {
  if (typeof record !== 'object') return 0;
  if (!('choices' in record)) return 0;
  let count = 0;
  for (const choice of record.choices) {
    const delta = choice.delta as { content?: unknown; tool_calls?: Array<{ function?: { arguments?: unknown } }> };
    if (typeof delta.content === 'string') count += delta.content.length;
    for (const call of delta.tool_calls ?? []) if (typeof call.function?.arguments === 'string') count += call.function.arguments.length;
  }
  return count;
}
