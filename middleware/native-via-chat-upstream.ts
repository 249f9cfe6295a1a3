/**
 * Reverse translation route: `POST /v1/messages` for a key group whose upstream speaks
 * chat-completions (when the operator turns on `keyGroups[].reverseTranslation`). The native request
 * is converted to chat-completions, sent upstream, and the reply converted back: a native message, or
 * native SSE events written as each upstream chunk is parsed, ending with `message_stop`, or with an
 * `error` event when the reply did not complete.
 */
import type http from 'node:http';
import type { RequestHandler, Response } from 'express';
import { emptyUsage, getContext, type RequestContext } from '../lib/context';
import { errors } from '../lib/errors';
import { readBody, tryParseJson } from '../lib/read-body';
import { formatSse } from '../lib/sse';
import type { UpstreamClient } from '../lib/upstream';
import {
  createStreamWriter, recordReply, sendJsonReply, failExchange, openSseReply, readUpstreamError, sendChatRequest,
} from '../lib/upstream/exchange';
import { followUpstreamStream } from '../lib/upstream/stream';
import type { NativeMessagesRequest } from '../translators/native-types';
import { convertNativeRequestToChat } from '../translators/native-to-chat-request';
import { convertChatErrorToNative, convertStreamErrorToNativeReply } from '../translators/chat-to-native-mapping';
import { convertChatCompletionToNative, type UpstreamChatCompletion } from '../translators/chat-to-native-response';
import { createReverseStreamTransform, type NativeStreamEvent, type UpstreamChatChunk } from '../translators/chat-to-native-stream';
import { createBodyCheck, nativeTranslationSchema } from './validate-body';

export interface NativeViaChatUpstreamOptions {
  /** Client of a chat-completions upstream. */
  upstream: UpstreamClient;
}

export function createNativeViaChatUpstream(options: NativeViaChatUpstreamOptions): RequestHandler {
  const { upstream } = options;
  const checkTranslatable = createBodyCheck(nativeTranslationSchema);
  return async (req, res, next) => {
    const ctx = getContext(res);
    try {
      checkTranslatable(req.body);
      const model = ctx.model!;
      const { request, warnings } = convertNativeRequestToChat(req.body as NativeMessagesRequest, { upstreamModel: model.upstreamModel });
      ctx.warnings.push(...warnings);
      if (ctx.warnings.length > 0) res.setHeader('x-gateway-warning', ctx.warnings.join('; '));
      const reply = await sendChatRequest(res, upstream, request);
      if (!reply) return;
      const { response } = reply;
      if (response.statusCode !== 200) return await sendUpstreamError(response, res, ctx, upstream);
      if (ctx.stream) return streamReply(response, res, ctx);
      const completion = tryParseJson((await readBody(response)).toString('utf8')) as UpstreamChatCompletion | undefined;
      if (!completion || typeof completion !== 'object' || !Array.isArray(completion.choices)) {
        throw errors.upstreamUnreachable('the upstream sent a reply that is not a chat completion');
      }
      const message = convertChatCompletionToNative(completion, { model: model.id });
      recordReply(ctx, { usage: { ...emptyUsage(), ...message.usage }, stopReason: message.stop_reason });
      sendJsonReply(res, 200, message);
    } catch (err) {
      failExchange(err, res, next);
    }
  };
}

/** An upstream error before any byte was sent: the same status, in the native error shape. */
async function sendUpstreamError(response: http.IncomingMessage, res: Response, ctx: RequestContext, upstream: UpstreamClient): Promise<void> {
  const raw = await readUpstreamError(response, upstream);
  const translated = convertChatErrorToNative(response.statusCode ?? 502, tryParseJson(raw));
  const retryAfter = response.headers['retry-after'];
  if (typeof retryAfter === 'string') res.setHeader('retry-after', retryAfter);
  sendJsonReply(res, translated.status, { ...translated.body, request_id: ctx.requestId });
}

/**
 * Translate the upstream chunks event by event (one write for the events of one upstream chunk).
 * Headers go out with the first event, so an upstream error record before any output still becomes a
 * real HTTP status.
 */
function streamReply(response: http.IncomingMessage, res: Response, ctx: RequestContext): void {
  const transform = createReverseStreamTransform({ model: ctx.model!.id });
  recordReply(ctx, { usage: transform.usage });
  const out = createStreamWriter(res);

  const write = (events: NativeStreamEvent[]) => {
    recordReply(ctx, { stopReason: transform.stopReason });
    if (events.length === 0 || res.writableEnded) return;
    if (!res.headersSent && events[0].event === 'error') {
      const { status, body } = convertStreamErrorToNativeReply(events[0].data.error as { type: string; message: string });
      sendJsonReply(res, status, { ...body, request_id: ctx.requestId });
      return;
    }
    openSseReply(res);
    for (const event of events) out.add(formatSse(event.data, event.event));
    if (transform.closed) out.end();
  };

  followUpstreamStream(response, {
    onEvent(event) {
      if (event.data === '[DONE]') return write(transform.done());
      const chunk = tryParseJson(event.data) as UpstreamChatChunk | undefined;
      write(chunk && typeof chunk === 'object' ? transform.push(chunk) : transform.fail('the upstream sent a record that is not JSON'));
    },
    onChunkParsed: out.flush,
    onEnd: () => write(transform.end()),
    onLost: (message) => write(transform.fail(message)),
  });
}
