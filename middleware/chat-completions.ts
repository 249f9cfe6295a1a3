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
import type { GatewayConfig } from '../lib/config';
import { getContext, type RequestContext } from '../lib/context';
import type { Logger } from '../lib/logger';
import type { GatewayStore } from '../lib/store/types';
import { formatSse } from '../lib/sse';
import type { UpstreamClient } from '../lib/upstream';
import {
  failExchange, promptCacheAffinity, readNativeMessage, sendNativeRequest, sendJsonReply, sendNativeErrorInChatShape, setTranslationHeaders,
} from '../lib/upstream-exchange';
import { relayTranslatedStream } from '../lib/upstream-stream';
import { convertChatRequest } from '../translators/chat-to-native-request';
import { collectThinkingBlocks, convertNativeResponse } from '../translators/native-to-chat-response';
import { continueWithoutThinking, findUnsignedToolTurn, restoreThinking, thinkingStoreId } from '../translators/chat-thinking';
import type { ChatThinkingBlock } from '../translators/chat-types';
import { createChatStreamTransform } from '../translators/native-to-chat-stream';
import type { ChatCompletionRequest } from '../translators/chat-types';
import type { ModelCapabilities } from '../translators/model-capabilities';
import type { NativeMessage, NativeMessagesRequest } from '../translators/native-types';

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
  store: GatewayStore;
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
      const settings = options.settings();
      const { request, warnings, droppedParams } = convertChatRequest(body, {
        upstreamModel: model.upstreamModel,
        defaultMaxTokens: catalogue.defaultMaxTokens(model),
        capabilities: model.capabilities,
        thinkingBudgets: settings.thinkingBudgets,
        promptCache: { ttl: catalogue.keyGroup(ctx.keyGroup ?? '')?.promptCacheTtl ?? '5m', minCacheableTokens: model.capabilities?.minCacheableTokens },
      });
      ctx.warnings.push(...warnings);
      const restored = await restoreToolLoopThinking(options.store, ctx.key!.id, request, model.capabilities);
      if (restored) ctx.warnings.push(restored);
      setTranslationHeaders(res, ctx.warnings, droppedParams);
      const keep = (blocks: readonly ChatThinkingBlock[], toolCallIds: readonly string[]) => keepThinking(options.store, logger, ctx, blocks, toolCallIds, settings.storeTtlMs);
      const reply = await sendNativeRequest(res, upstream, request, promptCacheAffinity(ctx.key!.id, body.prompt_cache_key));
      if (!reply) return;
      const { response } = reply;
      const created = Math.floor(Date.now() / 1000);
      if (response.statusCode !== 200) return await sendNativeErrorInChatShape(response, res, upstream);
      if (ctx.stream) return streamReply(response, res, ctx, created, body, onUnknownStopReason, keep);
      const message = await readNativeMessage<NativeMessage>(response, ctx);
      const completion = convertNativeResponse(message, { model: model.id, created, onUnknownStopReason });
      await keep(collectThinkingBlocks(message.content ?? []), (completion.choices[0].message.tool_calls ?? []).map((call) => call.id));
      sendJsonReply(res, 200, completion);
    } catch (err) {
      failExchange(err, res, next);
    }
  };
}

/**
 * Translate the upstream SSE stream record by record (relayTranslatedStream). After the first byte an
 * error becomes a `data: {"error": ...}` record and the stream ends without `[DONE]`.
 */
function streamReply(
  response: http.IncomingMessage,
  res: Response,
  ctx: RequestContext,
  created: number,
  body: ChatCompletionRequest,
  onUnknownStopReason: (value: string) => void,
  keep: (blocks: readonly ChatThinkingBlock[], toolCallIds: readonly string[]) => Promise<void>,
): void {
  const transform = createChatStreamTransform({
    model: ctx.model!.id,
    created,
    includeUsage: body.stream_options?.include_usage === true,
    onUnknownStopReason,
  });
  // The records that end the stream wait until the thinking is kept, so the next turn finds it
  // (only when there is some: otherwise they go out in the same write as the rest of the chunk).
  relayTranslatedStream(response, res, transform, (record) => formatSse(record),
    () => (transform.thinkingBlocks.length > 0 && transform.toolCallIds.length > 0 ? keep(transform.thinkingBlocks, transform.toolCallIds) : undefined));
}

/**
 * A tool loop's assistant turn that came back without its thinking (findUnsignedToolTurn): the blocks
 * kept for its first tool call by this key are put back; without them the turn goes on without
 * thinking. Returns the warning of the latter. A store that fails counts as holding nothing.
 */
async function restoreToolLoopThinking(store: GatewayStore, keyId: string, request: NativeMessagesRequest, caps: ModelCapabilities | undefined): Promise<string | undefined> {
  const turn = findUnsignedToolTurn(request, caps);
  if (!turn) return undefined;
  const kept = await store.getResponse(thinkingStoreId(turn.toolUseIds[0])).catch(() => null);
  if (kept && kept.keyId === keyId && Array.isArray(kept.items) && kept.items.length > 0) {
    restoreThinking(turn, kept.items as ChatThinkingBlock[]);
    return undefined;
  }
  return continueWithoutThinking(request, caps!);
}

/**
 * Keep a reply's thinking for its first tool call, for this key, `ttlMs` long (nothing to keep
 * without both). A store that fails costs the client nothing now: it is logged, and the next turn
 * goes on without thinking if the client drops the blocks. Never rejects.
 */
async function keepThinking(store: GatewayStore, logger: Logger, ctx: RequestContext, blocks: readonly ChatThinkingBlock[], toolCallIds: readonly string[], ttlMs: number): Promise<void> {
  if (blocks.length === 0 || toolCallIds.length === 0) return;
  try {
    await store.saveResponse({ id: thinkingStoreId(toolCallIds[0]), keyId: ctx.key!.id, response: {}, items: [...blocks] }, ttlMs);
  } catch (err) {
    logger.warn({ message: 'thinking of a tool call not kept: the store failed', request_id: ctx.requestId, error: (err as Error).message });
  }
}
