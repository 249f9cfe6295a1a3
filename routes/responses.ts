/**
 * The Responses route (`POST /v1/responses`) for key groups whose upstream is native: the request is
 * converted to a native request (with the stored conversation `previous_response_id` names before
 * it), sent upstream, and the reply converted back: a `response` object, or Responses stream events
 * written in the tick each upstream chunk is parsed (no timers, no sleeps), ending with
 * `response.completed` / `response.incomplete`, or `response.failed` when the reply did not complete.
 *
 * With `store` (the default), the conversation (input items and output items) is kept for
 * `responses.storeTtlMs` before the final event or body goes out, so a next call naming it always
 * finds it. See docs/responses.md.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import type { GatewayConfig } from '../lib/config';
import type { RequestContext } from '../lib/pipeline/context';
import { randomId } from '../lib/keys/secrets';
import type { Logger } from '../lib/observability/logger';
import { formatSse } from '../lib/http/sse';
import type { ResponseStore } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';
import { nativeRequest, promptCacheAffinity, setTranslationHeaders } from './exchange';
import { createReplyHandler, parseNativeMessage } from './reply';
import { keepThinking, restoreToolLoopThinking } from '../lib/store/kept-thinking';
import type { ChatThinkingBlock } from '../translators/chat-types';
import { decodeReasoning, wantsEncryptedReasoning } from '../translators/responses-reasoning';
import { convertResponsesRequest } from '../translators/responses-request';
import { convertNativeReply, viewOutputForClient, type ResponseOptions } from '../translators/responses-response';
import { convertNativeErrorReply } from '../translators/native-to-chat-errors';
import type { NativeMessage } from '../translators/native-types';
import { createResponsesStreamTransform, serializeResponsesStreamRecord } from '../translators/responses-stream';
import {
  type ResponsesInputItem, type ResponsesOutputItem, type ResponsesRequest, type ResponsesResponse, type ResponsesStreamRecord,
} from '../translators/responses-types';

export interface ResponsesOptions {
  upstream: UpstreamClient;
  catalogue: Catalogue;
  store: ResponseStore;
  /** The `responses` config section, read per request (a reload may change it). */
  settings: () => GatewayConfig['responses'];
  /** Where a response that could not be stored is reported. */
  logger: Logger;
  /** Largest stored conversation (its items as JSON), in bytes: the body limit, read per request. */
  limitBytes: () => number;
}

/** An id of the Responses API: `<prefix>_` + 24 base62 characters. */
export function newResponsesId(prefix: string): string {
  return `${prefix}_${randomId(24)}`;
}

/** This request's input as items (a string is one user message). */
function inputItems(body: ResponsesRequest): ResponsesInputItem[] {
  if (typeof body.input === 'string') return [{ type: 'message', role: 'user', content: body.input }];
  return body.input ?? [];
}

/** The signed thinking blocks of a response's full output (its reasoning items' encrypted_content). */
function thinkingOf(output: readonly ResponsesOutputItem[]): ChatThinkingBlock[] {
  return output.flatMap((item) => {
    const block = item.type === 'reasoning' ? decodeReasoning(item) : undefined;
    return block ? [block as ChatThinkingBlock] : [];
  });
}

/** The call ids of a response's tool calls, in order. */
function callIdsOf(output: readonly ResponsesOutputItem[]): string[] {
  return output.flatMap((item) => ('call_id' in item && typeof item.call_id === 'string' ? [item.call_id] : []));
}

/** What keeps one request's conversation: the response's full output, and what the client received. */
type Keeper = (response: ResponsesResponse, clientView: ResponsesResponse) => Promise<void>;

/**
 * Keep the conversation (called before the client hears the response is done), unless `store: false`:
 * every input item so far, then the full output (reasoning with its encrypted_content). Whatever
 * `store` says, the thinking of a reply with tool calls is kept for its first call id
 * (lib/store/kept-thinking.ts), for a client that sends the reasoning back without encrypted_content. A store that
 * fails does not cost the client its paid-for reply: the reply still goes out and the failure is
 * logged (a later `previous_response_id` naming it gets 404). Never rejects.
 */
function createKeeper(options: {
  store: ResponseStore; logger: Logger; ctx: RequestContext; body: ResponsesRequest; previousItems: ResponsesInputItem[];
  ttlMs: number; maxKeyBytes: number; limitBytes: number;
}): Keeper {
  const { store, logger, ctx, body } = options;
  const notStored = (response: ResponsesResponse, why: string): void => {
    logger.warn({ message: `response not stored: ${why}`, request_id: ctx.requestId, response_id: response.id });
  };
  return async (response, clientView) => {
    const callIds = callIdsOf(response.output);
    // Reasoning items are decoded only when there is a tool call to keep them for.
    if (callIds.length > 0) await keepThinking(store, logger, ctx, thinkingOf(response.output), callIds, options.ttlMs, options.maxKeyBytes);
    if (body.store === false) return;
    try {
      const record = {
        id: response.id, keyId: ctx.key!.id, response: clientView as unknown as Record<string, unknown>,
        items: [...options.previousItems, ...inputItems(body), ...response.output], sessionId: ctx.sessionId,
      };
      // A conversation past the body limit could never be continued (middleware/previous-response.ts).
      const bytes = Buffer.byteLength(JSON.stringify(record.items));
      if (bytes > options.limitBytes) return notStored(response, `its conversation is ${bytes} bytes, past the limit of ${options.limitBytes}`);
      if (!(await store.saveResponse(record, options.ttlMs, options.maxKeyBytes))) {
        return notStored(response, `the key holds responses.maxStoredBytesPerKey (${options.maxKeyBytes} bytes) already`);
      }
    } catch (err) {
      logger.warn({ message: 'response not stored: the store failed', request_id: ctx.requestId, response_id: response.id, error: (err as Error).message });
    }
  };
}

/** What the request's conversion decided that its reply needs. */
interface ResponsesExchange {
  responseOptions: ResponseOptions;
  includeEncrypted: boolean;
  keep: Keeper;
}

export function createResponses(options: ResponsesOptions): RequestHandler {
  const { upstream, catalogue, store, logger } = options;
  return createReplyHandler<ResponsesStreamRecord, ResponsesExchange>(upstream, {
    async convert(req, res, ctx) {
      const body = req.body as ResponsesRequest;
      const model = ctx.model!;
      const settings = options.settings();
      // Loaded (and counted by the credit hold) by the previous-response step before the admission.
      const previous = ctx.previous;
      const previousItems = (previous?.items ?? []) as ResponsesInputItem[];
      const converted = convertResponsesRequest(body, {
        upstreamModel: model.upstreamModel,
        defaultMaxTokens: catalogue.defaultMaxTokens(model),
        thinkingBudgets: settings.thinkingBudgets,
        capabilities: model.capabilities,
        promptCache: { ttl: catalogue.keyGroup(ctx.keyGroup ?? '')?.promptCacheTtl ?? '5m', minCacheableTokens: model.capabilities?.minCacheableTokens },
        previousItems,
      });
      ctx.warnings.push(...converted.warnings);
      const restored = restoreToolLoopThinking(ctx.keptThinking, converted.request, model.capabilities);
      if (restored) ctx.warnings.push(restored);
      if (converted.droppedTools.length > 0) ctx.droppedTools = converted.droppedTools;
      setTranslationHeaders(res, ctx.warnings, converted.droppedParams);

      const responseOptions: ResponseOptions = {
        id: newResponsesId('resp'), createdAt: Math.floor(Date.now() / 1000), model: model.id, request: body,
        toolNames: converted.toolNames, newId: newResponsesId,
      };
      // A chain of responses is one session: without a session id from the client, its root's id.
      if (body.store !== false) ctx.sessionId ??= previous ? previous.sessionId ?? previous.id : responseOptions.id;
      const keep = createKeeper({
        store, logger, ctx, body, previousItems, ttlMs: settings.storeTtlMs, maxKeyBytes: settings.maxStoredBytesPerKey, limitBytes: options.limitBytes(),
      });
      return {
        request: nativeRequest(converted.request, promptCacheAffinity(ctx.key!.id, body.prompt_cache_key)),
        state: { responseOptions, includeEncrypted: wantsEncryptedReasoning(body.include), keep },
      };
    },
    upstreamError: (response, _text, _ctx, body) => convertNativeErrorReply(response.statusCode ?? 502, body, response.headers['retry-after']),
    async whole(bytes, _response, ctx, { responseOptions, includeEncrypted, keep }) {
      const message = parseNativeMessage<NativeMessage>(bytes, ctx);
      const full = convertNativeReply(message, responseOptions);
      const clientView = { ...full, output: viewOutputForClient(full.output, includeEncrypted) };
      await keep(full, clientView);
      return { status: 200, headers: {}, body: clientView };
    },
    // After the first byte a failure is `response.failed` with the message. The events that end a
    // completed reply wait for the store (when kept).
    stream(_response, _ctx, { responseOptions, includeEncrypted, keep }) {
      const transform = createResponsesStreamTransform({ ...responseOptions, includeEncrypted });
      return {
        transform,
        format: (event) => formatSse(serializeResponsesStreamRecord(event), event.type),
        beforeClose(events) {
          const final = events[events.length - 1];
          // `keep` never rejects (a store failure is logged).
          return final.type === 'response.failed' ? undefined : keep(transform.response, final.response as ResponsesResponse);
        },
      };
    },
  });
}
