/**
 * Chat-completions pass-through, for key groups whose upstream speaks chat-completions itself: the
 * request goes to `<upstream>/v1/chat/completions` untranslated (only `model` becomes the upstream's
 * name, and a request without an output limit gets `max_tokens`: the model default its credit hold
 * counted; `n` is at most MAX_CHOICES and held for each choice), and the reply comes back as it is, streaming included, record by record as it arrives.
 *
 * Billing needs the usage, so a streamed request that did not ask for it gets
 * `stream_options.include_usage` upstream, and the usage-only chunk and the `usage: null` fields it
 * causes are removed on the way back: the client sees what it asked for.
 */
import type http from 'node:http';
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import { emptyUsage, recordReply } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { tryParseJson } from '../lib/http/read-body';
import { formatSse } from '../lib/http/sse';
import type { UpstreamClient } from '../lib/upstream';
import { chatRequest } from './exchange';
import { createReplyHandler, isEventStream, modelRenameOf } from './reply';
import type { ChatCompletionRequest } from '../translators/chat-types';
import { convertChatUsageToNative } from '../translators/chat-to-native-mapping';
import { createPassthroughStreamTransform, type PassthroughRecord } from '../translators/chat-passthrough-stream';

export interface ChatPassthroughOptions {
  /** Client of a chat-completions upstream (bearer credential). */
  upstream: UpstreamClient;
  /** Gives the output limit sent when the client names none (the one the credit hold counted). */
  catalogue: Catalogue;
}

/** Reply headers passed from the upstream to the client (the rest describe the gateway's credential). */
const PASSED_REPLY_HEADERS = ['content-type', 'retry-after', 'retry-after-ms', 'x-should-retry'];

/** The upstream reply's headers the client gets. */
function passedHeaders(response: http.IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_REPLY_HEADERS) {
    const value = response.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

export function createChatPassthrough(options: ChatPassthroughOptions): RequestHandler {
  return createReplyHandler<PassthroughRecord, boolean>(options.upstream, {
    convert(req, _res, ctx) {
      const body = req.body as ChatCompletionRequest;
      const model = ctx.model!;
      const wantsUsage = body.stream_options?.include_usage === true;
      const request: ChatCompletionRequest = { ...body, model: model.upstreamModel };
      // The credit hold counted the model default for a request without a limit: the upstream gets it,
      // so no reply can run past what was held.
      if (!isLimit(body.max_tokens) && !isLimit(body.max_completion_tokens)) request.max_tokens = options.catalogue.defaultMaxTokens(model);
      if (ctx.stream && !wantsUsage) request.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
      return { request: chatRequest(request), state: wantsUsage };
    },
    // The upstream's own error body (already in the chat shape), without any credential it quotes.
    upstreamError: (response, text) => ({ status: response.statusCode ?? 502, headers: passedHeaders(response), body: text }),
    isStream: isEventStream,
    whole(bytes, response, ctx) {
      const parsed = tryParseJson(bytes.toString('utf8')) as Record<string, any> | undefined;
      if (!parsed || typeof parsed !== 'object' || !Array.isArray(parsed.choices)) {
        throw errors.upstreamUnreachable('the upstream sent a reply that is not a chat completion');
      }
      recordReply(ctx, { usage: { ...emptyUsage(), ...convertChatUsageToNative(parsed.usage) }, stopReason: parsed.choices?.[0]?.finish_reason ?? null });
      if (parsed.model === ctx.model!.upstreamModel) parsed.model = ctx.model!.id;
      return { status: 200, headers: passedHeaders(response), body: parsed };
    },
    stream: (_response, ctx, wantsUsage) => ({
      transform: createPassthroughStreamTransform({ rename: modelRenameOf(ctx.model!), stripUsage: !wantsUsage }),
      format: (record) => formatSse(record),
    }),
  });
}

/** True for an output limit the credit hold reads (a positive number). */
function isLimit(value: unknown): boolean {
  return typeof value === 'number' && value > 0;
}
