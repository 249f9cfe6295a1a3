/**
 * Reverse translation route: `POST /v1/messages` for a key group whose upstream speaks
 * chat-completions (when the operator turns on `keyGroups[].reverseTranslation`). The native request
 * is converted to chat-completions, sent upstream, and the reply converted back: a native message, or
 * native SSE events written as each upstream chunk is parsed, ending with `message_stop`, or with an
 * `error` event when the reply did not complete.
 */
import type { RequestHandler } from 'express';
import { emptyUsage, recordReply } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { tryParseJson } from '../lib/http/read-body';
import { formatSse } from '../lib/http/sse';
import type { UpstreamClient } from '../lib/upstream';
import { chatRequest } from './exchange';
import { createReplyHandler } from './reply';
import type { NativeMessagesRequest } from '../translators/native-types';
import { convertNativeRequestToChat } from '../translators/native-to-chat-request';
import { convertChatErrorToNative } from '../translators/chat-to-native-mapping';
import { convertChatCompletionToNative, type UpstreamChatCompletion } from '../translators/chat-to-native-response';
import { createReverseStreamTransform, type NativeStreamEvent } from '../translators/chat-to-native-stream';
import { createBodyCheck, nativeTranslationSchema } from '../middleware/validate-body';

export interface NativeViaChatUpstreamOptions {
  /** Client of a chat-completions upstream. */
  upstream: UpstreamClient;
}

export function createNativeViaChatUpstream(options: NativeViaChatUpstreamOptions): RequestHandler {
  const checkTranslatable = createBodyCheck(nativeTranslationSchema);
  return createReplyHandler<NativeStreamEvent, undefined>(options.upstream, {
    convert(req, res, ctx) {
      checkTranslatable(req.body);
      const { request, warnings } = convertNativeRequestToChat(req.body as NativeMessagesRequest, { upstreamModel: ctx.model!.upstreamModel });
      ctx.warnings.push(...warnings);
      if (ctx.warnings.length > 0) res.setHeader('x-gateway-warning', ctx.warnings.join('; '));
      return { request: chatRequest(request), state: undefined };
    },
    // The same status, in the native error shape.
    upstreamError(response, _text, ctx, body) {
      const translated = convertChatErrorToNative(response.statusCode ?? 502, body);
      const retryAfter = response.headers['retry-after'];
      const headers: Record<string, string> = typeof retryAfter === 'string' ? { 'retry-after': retryAfter } : {};
      return { status: translated.status, headers, body: { ...translated.body, request_id: ctx.requestId } };
    },
    whole(bytes, _response, ctx) {
      const completion = tryParseJson(bytes.toString('utf8')) as UpstreamChatCompletion | undefined;
      if (!completion || typeof completion !== 'object' || !Array.isArray(completion.choices)) {
        throw errors.upstreamUnreachable('the upstream sent a reply that is not a chat completion');
      }
      const message = convertChatCompletionToNative(completion, { model: ctx.model!.id });
      recordReply(ctx, { usage: { ...emptyUsage(), ...message.usage }, stopReason: message.stop_reason });
      return { status: 200, headers: {}, body: message };
    },
    // Headers go out with the first event, so an upstream error record before any output still
    // becomes a real HTTP status.
    stream: (_response, ctx) => ({
      transform: createReverseStreamTransform({ model: ctx.model!.id, requestId: ctx.requestId }),
      format: (event) => formatSse(event.data, event.event),
    }),
  });
}
