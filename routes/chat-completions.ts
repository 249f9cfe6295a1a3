/**
 * The translator route: a chat-completions request is converted to a native request, sent upstream,
 * and the reply converted back: a `chat.completion`, or `chat.completion.chunk` records as each
 * upstream event is parsed (written in the tick the upstream chunk holding it was parsed, with the
 * other events of that chunk; no timers, no sleeps), ending with `data: [DONE]`, or with an error
 * record when the reply did not complete.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import type { GatewayConfig } from '../lib/config';
import type { Logger } from '../lib/observability/logger';
import type { ResponseStore } from '../lib/store/types';
import { formatSse } from '../lib/http/sse';
import type { UpstreamClient } from '../lib/upstream';
import { nativeRequest, promptCacheAffinity, setTranslationHeaders } from './exchange';
import { createReplyHandler, parseNativeMessage, type ConvertedStream } from './reply';
import { convertChatRequest } from '../translators/chat-to-native-request';
import { collectThinkingBlocks, convertNativeResponse } from '../translators/native-to-chat-response';
import { keepThinking, restoreToolLoopThinking } from '../lib/store/kept-thinking';
import type { ChatCompletionRequest, ChatThinkingBlock } from '../translators/chat-types';
import { createChatStreamTransform, serializeChatStreamRecord, type ChatStreamRecord } from '../translators/native-to-chat-stream';
import { convertNativeErrorReply } from '../translators/native-to-chat-errors';
import type { NativeMessage } from '../translators/native-types';

export interface ChatCompletionsOptions {
  upstream: UpstreamClient;
  catalogue: Catalogue;
  logger: Logger;
  /**
   * The `responses` config section, read per request: `thinkingBudgets` serve budget-only models,
   * `storeTtlMs` is how long a reply's thinking is kept for its tool calls.
   */
  settings: () => GatewayConfig['responses'];
  /** Where a reply's signed thinking is kept per key for the next turn of its tool loop. */
  store: ResponseStore;
}

/** What the request's conversion decided that its reply needs. */
interface ChatExchange {
  body: ChatCompletionRequest;
  created: number;
  keep: (blocks: readonly ChatThinkingBlock[], toolCallIds: readonly string[]) => Promise<void>;
}

export function createChatCompletions(options: ChatCompletionsOptions): RequestHandler {
  const { upstream, catalogue, logger } = options;
  const unknownStopReasons = new Set<string>();
  const warnUnknownStopReason = (requestId: string, value: string) => {
    if (unknownStopReasons.has(value)) return;
    unknownStopReasons.add(value);
    logger.warn({ message: 'unknown stop reason mapped to finish_reason "stop"', request_id: requestId, stop_reason: value });
  };
  return createReplyHandler<ChatStreamRecord, ChatExchange>(upstream, {
    async convert(req, res, ctx) {
      const body = req.body as ChatCompletionRequest;
      const model = ctx.model!;
      const settings = options.settings();
      const { request, warnings, droppedParams } = convertChatRequest(body, {
        upstreamModel: model.upstreamModel,
        defaultMaxTokens: catalogue.defaultMaxTokens(model),
        capabilities: model.capabilities,
        thinkingBudgets: settings.thinkingBudgets,
        promptCache: { ttl: catalogue.keyGroup(ctx.keyGroup ?? '')?.promptCacheTtl ?? '5m', minCacheableTokens: model.capabilities?.minCacheableTokens },
      });
      ctx.warnings.push(...warnings);
      const restored = restoreToolLoopThinking(ctx.keptThinking, request, model.capabilities);
      if (restored) ctx.warnings.push(restored);
      setTranslationHeaders(res, ctx.warnings, droppedParams);
      const keep = (blocks: readonly ChatThinkingBlock[], toolCallIds: readonly string[]) => keepThinking(options.store, logger, ctx, blocks, toolCallIds, settings.storeTtlMs, settings.maxStoredBytesPerKey);
      return {
        request: nativeRequest(request, promptCacheAffinity(ctx.key!.id, body.prompt_cache_key)),
        state: { body, created: Math.floor(Date.now() / 1000), keep },
      };
    },
    upstreamError: (response, _text, _ctx, body) => convertNativeErrorReply(response.statusCode ?? 502, body, response.headers['retry-after']),
    async whole(bytes, _response, ctx, { created, keep }) {
      const message = parseNativeMessage<NativeMessage>(bytes, ctx);
      const onUnknownStopReason = (value: string) => warnUnknownStopReason(ctx.requestId, value);
      const completion = convertNativeResponse(message, { model: ctx.model!.id, created, onUnknownStopReason });
      await keep(collectThinkingBlocks(message.content ?? []), (completion.choices[0].message.tool_calls ?? []).map((call) => call.id));
      return { status: 200, headers: {}, body: completion };
    },
    stream(_response, ctx, { body, created, keep }): ConvertedStream<ChatStreamRecord> {
      const transform = createChatStreamTransform({
        model: ctx.model!.id,
        created,
        includeUsage: body.stream_options?.include_usage === true,
        onUnknownStopReason: (value) => warnUnknownStopReason(ctx.requestId, value),
      });
      // After the first byte an error is a `data: {"error": ...}` record and the stream ends without
      // `[DONE]`. The records that end the stream wait until the thinking is kept, so the next turn
      // finds it (only when there is some: otherwise they go out in the same write as the rest of the chunk).
      return {
        transform,
        format: (record) => formatSse(serializeChatStreamRecord(record)),
        beforeClose: () => (transform.thinkingBlocks.length > 0 && transform.toolCallIds.length > 0 ? keep(transform.thinkingBlocks, transform.toolCallIds) : undefined),
      };
    },
  });
}
