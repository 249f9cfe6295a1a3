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
import type { RequestHandler, Response } from 'express';
import type { Catalogue } from '../lib/catalogue';
import { emptyUsage, getContext, type RequestContext } from '../lib/context';
import { errors } from '../lib/errors';
import { readBody, tryParseJson } from '../lib/read-body';
import { formatSse } from '../lib/sse';
import type { UpstreamClient } from '../lib/upstream';
import {
  createStreamWriter, recordReply, sendJsonReply, writeReplyHead, failExchange, modelRenameOf, type ModelRename, openSseReply, readUpstreamError, sendChatRequest,
} from '../lib/upstream/exchange';
import { followUpstreamStream } from '../lib/upstream/stream';
import type { ChatCompletionRequest } from '../translators/chat-types';
import { formatChatStreamFailure } from '../translators/native-to-chat-errors';
import { convertChatUsageToNative } from '../translators/chat-to-native-mapping';

export interface ChatPassthroughOptions {
  /** Client of a chat-completions upstream (bearer credential). */
  upstream: UpstreamClient;
  /** Gives the output limit sent when the client names none (the one the credit hold counted). */
  catalogue: Catalogue;
}

/** Reply headers passed from the upstream to the client (the rest describe the gateway's credential). */
const PASSED_REPLY_HEADERS = ['content-type', 'retry-after', 'retry-after-ms', 'x-should-retry'];

export function createChatPassthrough(options: ChatPassthroughOptions): RequestHandler {
  const { upstream } = options;
  return async (req, res, next) => {
    const ctx = getContext(res);
    try {
      const body = req.body as ChatCompletionRequest;
      const model = ctx.model!;
      const wantsUsage = body.stream_options?.include_usage === true;
      const request: ChatCompletionRequest = { ...body, model: model.upstreamModel };
      // The credit hold counted the model default for a request without a limit: the upstream gets it,
      // so no reply can run past what was held.
      if (!isLimit(body.max_tokens) && !isLimit(body.max_completion_tokens)) request.max_tokens = options.catalogue.defaultMaxTokens(model);
      if (ctx.stream && !wantsUsage) request.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
      const reply = await sendChatRequest(res, upstream, request);
      if (!reply) return;
      const { response } = reply;
      const isStream = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
      if (response.statusCode === 200 && isStream) return streamReply(response, res, ctx, { rename: modelRenameOf(model), stripUsage: !wantsUsage });
      for (const name of PASSED_REPLY_HEADERS) {
        const value = response.headers[name];
        if (typeof value === 'string') res.setHeader(name, value);
      }
      if (response.statusCode !== 200) {
        // The upstream's own error body (already in the chat shape), without any credential it quotes.
        const text = await readUpstreamError(response, upstream);
        writeReplyHead(res, response.statusCode ?? 502, {});
        res.end(text);
        return;
      }
      const parsed = tryParseJson((await readBody(response)).toString('utf8')) as Record<string, any> | undefined;
      if (!parsed || typeof parsed !== 'object' || !Array.isArray(parsed.choices)) {
        throw errors.upstreamUnreachable('the upstream sent a reply that is not a chat completion');
      }
      recordReply(ctx, { usage: { ...emptyUsage(), ...convertChatUsageToNative(parsed.usage) }, stopReason: parsed.choices?.[0]?.finish_reason ?? null });
      if (parsed.model === model.upstreamModel) parsed.model = model.id;
      sendJsonReply(res, 200, parsed);
    } catch (err) {
      failExchange(err, res, next);
    }
  };
}

/** True for an output limit the credit hold reads (a positive number). */
function isLimit(value: unknown): boolean {
  return typeof value === 'number' && value > 0;
}

/**
 * Pass SSE records through as they are parsed (one write for the records of one upstream chunk). A
 * record is re-serialised only when it must change (model renamed, usage the client did not ask
 * for); otherwise its data text is written unchanged.
 */
function streamReply(
  response: http.IncomingMessage,
  res: Response,
  ctx: RequestContext,
  options: { rename: ModelRename | null; stripUsage: boolean },
): void {
  let finished = false;
  const out = createStreamWriter(res);
  const write = (text: string) => {
    if (res.writableEnded || res.destroyed) return;
    openSseReply(res);
    out.add(text);
  };
  const fail = (message: string) => {
    if (finished) return;
    finished = true;
    write(formatSse(formatChatStreamFailure(message)));
    out.end();
  };

  followUpstreamStream(response, {
    onEvent(event) {
      if (finished) return;
      if (event.data === '[DONE]') {
        finished = true;
        write(formatSse('[DONE]'));
        out.end();
        return;
      }
      const chunk = tryParseJson(event.data) as Record<string, any> | undefined;
      if (!chunk || typeof chunk !== 'object') return fail('the upstream sent a record that is not JSON');
      let changed = false;
      if (chunk.usage) recordReply(ctx, { usage: { ...emptyUsage(), ...convertChatUsageToNative(chunk.usage) } });
      const finishReason = chunk.choices?.[0]?.finish_reason;
      if (finishReason) recordReply(ctx, { stopReason: finishReason });
      if (options.stripUsage && 'usage' in chunk) {
        if (Array.isArray(chunk.choices) && chunk.choices.length === 0) return; // the usage-only chunk
        delete chunk.usage;
        changed = true;
      }
      if (options.rename && chunk.model === options.rename.from) {
        chunk.model = options.rename.to;
        changed = true;
      }
      write(formatSse(changed ? chunk : event.data));
      if (chunk.error) {
        finished = true;
        out.end();
      }
    },
    onChunkParsed: out.flush,
    onEnd: () => fail('the upstream stream ended without [DONE]'),
    onLost: fail,
  });
}
