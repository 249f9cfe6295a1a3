/**
 * What every upstream route does around its upstream call, for the reply path (reply.ts): send
 * through the upstream client's retry loop with the client's lifetime (a client that goes away
 * cancels the attempt and any retry wait), record what the reply showed for the finish step (status,
 * time to first byte, usage, stop reason), write reply heads and SSE records.
 */
import type http from 'node:http';
import type { Response } from 'express';
import type { ModelConfig } from '../config';
import { getContext, type RequestContext, type Usage } from '../context';
import { errors } from '../errors';
import { tryParseJson } from '../read-body';
import { operationNameOf } from '../trace-attributes';
import type { TraceSpan } from '../trace-span';
import type { UpstreamReply } from './attempt';
import type { StartAttempt, UpstreamClient, UpstreamRequest } from './client';
import type { NativeUsage } from '../../translators/native-types';
import { emptyUsage, mergeNativeUsage } from '../../translators/usage';

/**
 * Send for the client behind `res`: `request` through `upstream.send`, or the attempts `start` makes
 * through `upstream.exchange`. When the client goes away before its reply has
 * been written, the attempt under way (and any retry wait) is cancelled. The reply's status goes on
 * the context, with the target that sent it. Attempts are routed by the request's canonical model
 * and session (`ctx.sessionId`).
 * @returns the reply, or undefined when the client was already gone (the reply has been aborted)
 * @throws GatewayError 502/504 from the upstream client
 */
export async function sendForClient(res: Response, upstream: UpstreamClient, request: UpstreamRequest | StartAttempt): Promise<UpstreamReply | undefined> {
  const clientGone = new AbortController();
  let reply: UpstreamReply | undefined;
  const ctx = getContext(res);
  // A billed whole (non-streamed) reply is not cancelled when its client leaves: the upstream bills
  // the request whether or not anyone reads the reply, so the route reads it to its end (writing to
  // the closed response does nothing) and the settlement bills its usage. A stream is cancelled at once.
  const readWhenGone = !ctx.stream && ctx.reservation !== undefined;
  res.once('close', () => {
    if (res.writableFinished || readWhenGone) return;
    clientGone.abort();
    reply?.abort();
  });
  const span = ctx.trace ? startUpstreamSpan(ctx, upstream, request) : undefined;
  try {
    // The context is the route: its canonical model (a target's `models`) and session (affinity).
    if (typeof request === 'function') {
      reply = await upstream.exchange(request, clientGone.signal, ctx);
    } else {
      const accept = ctx.stream ? 'text/event-stream' : 'application/json';
      reply = await upstream.send({ ...request, headers: { accept, ...request.headers } }, clientGone.signal, ctx);
    }
  } catch (err) {
    span?.end(err as Error);
    throw err;
  }
  if (span) {
    span.event('upstream.first_byte');
    span.set({ 'http.response.status_code': reply.response.statusCode });
    // Its last byte read, or the reply cut short.
    const end = () => span.end();
    reply.response.once('end', end);
    reply.response.once('close', end);
  }
  if (res.destroyed && !readWhenGone) {
    reply.abort();
    return undefined;
  }
  ctx.upstreamTarget = reply.target;
  recordReply(ctx, { status: reply.response.statusCode ?? 502 });
  return reply;
}

/**
 * The client span of an upstream call (GenAI conventions: `{operation} {model}`), with the upstream's
 * address (its origin only: never a credential) on it and on the server span.
 */
function startUpstreamSpan(ctx: RequestContext, upstream: UpstreamClient, request: UpstreamRequest | StartAttempt): TraceSpan {
  const operation = operationNameOf(ctx.route);
  const model = ctx.model?.upstreamModel;
  // The native proxy's attempts and the translating routes' native requests speak the Messages API.
  const provider = typeof request === 'function' || request.path.startsWith('/v1/messages') ? 'anthropic' : 'openai';
  const target = upstream.url.origin;
  ctx.trace!.set({ 'gateway.upstream.target': target, 'gen_ai.provider.name': provider });
  return ctx.trace!.startSpan(operation && model ? `${operation} ${model}` : 'upstream', 'client', {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': provider,
    'gen_ai.request.model': model,
    'server.address': upstream.url.hostname,
    'server.port': Number(upstream.url.port) || (upstream.url.protocol === 'https:' ? 443 : 80),
    'gateway.upstream.target': target,
  });
}

/** The native API version the translating routes speak upstream. */
export const NATIVE_API_VERSION = '2023-06-01';

/**
 * A translating route's native messages request (`body` serialised), for the reply path.
 * `affinity` keeps requests on one upstream credential (UpstreamRequest.affinity).
 */
export function nativeRequest(body: unknown, affinity?: string): UpstreamRequest {
  return { path: '/v1/messages', headers: { 'anthropic-version': NATIVE_API_VERSION }, body: Buffer.from(JSON.stringify(body)), affinity };
}

/**
 * The credential affinity of a translated request: its key and the client's `prompt_cache_key`, so
 * requests sharing a cache key reach the same upstream credential (and its prompt cache); undefined
 * without a key.
 */
export function promptCacheAffinity(keyId: string, promptCacheKey: unknown): string | undefined {
  return typeof promptCacheKey === 'string' && promptCacheKey !== '' ? `${keyId}\n${promptCacheKey}` : undefined;
}

/** A chat-completions request (`body` serialised) for a chat-completions upstream, for the reply path. */
export function chatRequest(body: unknown): UpstreamRequest {
  return { path: '/v1/chat/completions', headers: {}, body: Buffer.from(JSON.stringify(body)) };
}

/** What a reply showed, for settlement, the log line and the metrics. */
export interface ReplyFacts {
  /** The upstream's HTTP status. */
  status?: number;
  /** The usage so far (a stream's object may be updated in place as events arrive). */
  usage?: Usage;
  stopReason?: string | null;
  /** The first byte of the reply went to the client now. */
  firstByte?: boolean;
}

/** Record what a reply showed on the request's context: the one place every upstream route reports it. */
export function recordReply(ctx: RequestContext, facts: ReplyFacts): void {
  if (facts.status !== undefined) ctx.upstreamStatus = facts.status;
  if (facts.usage !== undefined) ctx.usage = facts.usage;
  if (facts.stopReason !== undefined) ctx.stopReason = facts.stopReason;
  if (facts.firstByte) ctx.firstByteMs ??= Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
}

/** Write the reply head (status and headers) and record the time to first byte. */
export function writeReplyHead(res: Response, status: number, headers: http.OutgoingHttpHeaders): void {
  res.writeHead(status, headers);
  recordReply(getContext(res), { firstByte: true });
}

/**
 * Send `body` as the whole JSON reply of an upstream route (the headers already set on `res` kept),
 * recording the time to first byte.
 * @throws TypeError when `body` cannot be serialised, as `JSON.stringify` does
 */
export function sendJsonReply(res: Response, status: number, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body) ?? 'null');
  writeReplyHead(res, status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length) });
  res.end(bytes);
}

/** Send the SSE reply head if it has not gone yet. */
export function openSseReply(res: Response): void {
  if (res.headersSent) return;
  writeReplyHead(res, 200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no', connection: 'keep-alive' });
}

/**
 * A streamed reply's output, written once per upstream chunk: what the events of one chunk produce is
 * gathered, then written in one `res.write` when the chunk has been parsed (in the same tick: pass
 * `flush` as `onChunkParsed` of followUpstreamStream, reply.ts), so one upstream chunk is one HTTP chunk
 * to the client. Nothing is written once the response has ended or was destroyed.
 */
export interface StreamWriter {
  /** Gather `text` (SSE records) with the rest of the current upstream chunk's output. */
  add(text: string): void;
  /** Write what was gathered, in one write. */
  flush(): void;
  /** Write what was gathered and end the reply. */
  end(): void;
}

export function createStreamWriter(res: Response): StreamWriter {
  let pending = '';
  const writable = () => !res.writableEnded && !res.destroyed;
  return {
    add(text) {
      pending += text;
    },
    flush() {
      if (pending !== '' && writable()) res.write(pending);
      pending = '';
    },
    end() {
      if (writable()) res.end(pending);
      pending = '';
    },
  };
}

/**
 * Parse a whole native message reply (the translating routes' non-streaming upstream reply) and record
 * its usage and stop reason.
 * @throws GatewayError 502 when the body is not a native message
 */
export function parseNativeMessage<T extends { content: unknown; usage?: unknown; stop_reason?: string | null }>(body: Buffer, ctx: RequestContext): T {
  const message = tryParseJson(body.toString('utf8')) as T | undefined;
  if (!message || typeof message !== 'object' || !Array.isArray(message.content)) {
    throw errors.upstreamUnreachable('the upstream sent a reply that is not a message');
  }
  recordReply(ctx, { usage: mergeNativeUsage(emptyUsage(), message.usage as NativeUsage), stopReason: message.stop_reason ?? null });
  return message;
}

/** How a reply's `model` is renamed from the upstream's name to the canonical ID; null when they match. */
export interface ModelRename {
  from: string;
  to: string;
}

/** The rename replies of `model` need (catalogue `upstreamModel` -> canonical `id`). */
export function modelRenameOf(model: Pick<ModelConfig, 'id' | 'upstreamModel'>): ModelRename | null {
  return model.id === model.upstreamModel ? null : { from: model.upstreamModel, to: model.id };
}

/**
 * The headers of a translated request's reply that tell the client what the translation changed:
 * `x-gateway-warning` (lossy conversions, `; `-separated) and `x-gateway-dropped-params` (the sampling
 * fields the model refuses, dropped before the upstream saw them, `, `-separated). Unset when empty.
 */
export function setTranslationHeaders(res: Response, warnings: readonly string[], droppedParams: readonly string[]): void {
  if (warnings.length > 0) res.setHeader('x-gateway-warning', warnings.join('; '));
  if (droppedParams.length > 0) res.setHeader('x-gateway-dropped-params', droppedParams.join(', '));
}
