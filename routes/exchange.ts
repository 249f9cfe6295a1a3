/**
 * The upstream step of the reply path (reply.ts): the upstream request a translating route sends,
 * and sending it through the upstream client's retry loop with the client's lifetime (a client that
 * goes away cancels the attempt and any retry wait), with its trace span and the reply's status
 * recorded.
 */
import type { Response } from 'express';
import { getContext, recordReply, type RequestContext } from '../lib/pipeline/context';
import { operationNameOf } from '../lib/observability/trace-attributes';
import type { TraceSpan } from '../lib/observability/trace-span';
import { Cancellation, type UpstreamReply } from '../lib/upstream/attempt';
import type { StartAttempt, UpstreamClient, UpstreamRequest } from '../lib/upstream/client';
import { isOutcomeUnknown } from '../lib/upstream/retry-policy';

/**
 * Send for the client behind `res`: `request` through `upstream.send`, or the attempts `start` makes
 * through `upstream.exchange`. When the client goes away before its reply has
 * been written, the attempt under way (and any retry wait) is cancelled. The reply's status goes on
 * the context, with the target that sent it. Attempts are routed by the request's canonical model
 * and session (`ctx.sessionId`).
 * @returns the reply (also when a billed reply's client has gone: it is read for its usage), or
 *   undefined when the client was already gone (the reply has been aborted)
 * @throws GatewayError 502/504 from the upstream client (`ctx.upstreamOutcomeUnknown` set when the
 *   upstream may have run the request all the same)
 */
export async function sendForClient(res: Response, upstream: UpstreamClient, request: UpstreamRequest | StartAttempt): Promise<UpstreamReply | undefined> {
  const clientGone = new Cancellation();
  let reply: UpstreamReply | undefined;
  const ctx = getContext(res);
  // A billed whole (non-streamed) reply is not cancelled when its client leaves: the upstream bills
  // the request whether or not anyone reads the reply, so the route reads it to its end (writing to
  // the closed response does nothing) and the settlement bills its usage. A stream is cancelled at once.
  const readWhenGone = !ctx.stream && ctx.reservation !== undefined;
  // A billed stream whose client leaves before the reply head: an attempt already sent whole is not
  // cancelled (the upstream may be running it and will bill it); its reply is read to its end without a
  // client (routes/reply.ts, bounded by the idle limit) and billed at its usage. One not yet sent is.
  clientGone.sparesSent = ctx.stream && ctx.reservation !== undefined;
  res.once('close', () => {
    if (res.writableFinished || readWhenGone) return;
    clientGone.abort();
    reply?.abort();
  });
  const span = ctx.trace ? startUpstreamSpan(ctx, request) : undefined;
  try {
    // The context is the route: its canonical model (a target's `models`) and session (affinity).
    if (typeof request === 'function') {
      reply = await upstream.exchange(request, clientGone, ctx);
    } else {
      const accept = ctx.stream ? 'text/event-stream' : 'application/json';
      reply = await upstream.send({ ...request, headers: { accept, ...request.headers } }, clientGone, ctx);
    }
  } catch (err) {
    span?.end(err as Error);
    // No head, but the upstream may have run it (and bill it): the settlement bills the hold.
    if (isOutcomeUnknown(err)) ctx.upstreamOutcomeUnknown = true;
    throw err;
  }
  if (span) {
    span.event('upstream.first_byte');
    // The target that answered (after a failover, not the first one tried): its origin only, never a credential.
    const served = upstream.targets.find((target) => target.id === reply!.target)?.url ?? upstream.url;
    ctx.trace!.set({ 'gateway.upstream.target': served.origin });
    span.set({
      'http.response.status_code': reply.response.statusCode,
      'server.address': served.hostname,
      'server.port': Number(served.port) || (served.protocol === 'https:' ? 443 : 80),
      'gateway.upstream.target': served.origin,
    });
    // Its last byte read, or the reply cut short.
    const end = () => span.end();
    reply.response.once('end', end);
    reply.response.once('close', end);
  }
  if (res.destroyed && !readWhenGone && !clientGone.sparesSent) {
    reply.abort();
    return undefined;
  }
  ctx.upstreamTarget = reply.target;
  const served = upstream.targets.length === 1 ? upstream.targets[0] : upstream.targets.find((target) => target.id === reply!.target);
  // Set only for a target priced apart (config `priceMultiplier`): a first-party reply adds nothing to the context.
  if (served !== undefined && served.priceMultiplier !== 1) ctx.priceMultiplier = served.priceMultiplier;
  if (reply.dropped) setTranslationHeaders(res, [], reply.dropped);
  recordReply(ctx, { status: reply.response.statusCode ?? 502 });
  return reply;
}

/**
 * The client span of an upstream call (GenAI conventions: `{operation} {model}`); the address of the
 * target that answers goes on it and on the server span once it has.
 */
function startUpstreamSpan(ctx: RequestContext, request: UpstreamRequest | StartAttempt): TraceSpan {
  const operation = operationNameOf(ctx.route);
  const model = ctx.model?.upstreamModel;
  // The native proxy's attempts and the translating routes' native requests speak the Messages API.
  const provider = typeof request === 'function' || request.path.startsWith('/v1/messages') ? 'anthropic' : 'openai';
  ctx.trace!.set({ 'gen_ai.provider.name': provider });
  // The address of the target that answers is set when it has (sendForClient).
  return ctx.trace!.startSpan(operation && model ? `${operation} ${model}` : 'upstream', 'client', {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': provider,
    'gen_ai.request.model': model,
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

/**
 * The headers of a translated request's reply that tell the client what the translation changed:
 * `x-gateway-warning` (lossy conversions, `; `-separated) and `x-gateway-dropped-params` (the sampling
 * fields the model refuses, and the beta flags and body fields the chosen cloud target refuses
 * (lib/upstream/providers/capabilities.ts), dropped before the upstream saw them, `, `-separated). Unset when empty.
 */
export function setTranslationHeaders(res: Response, warnings: readonly string[], droppedParams: readonly string[]): void {
  if (warnings.length > 0) res.setHeader('x-gateway-warning', warnings.join('; '));
  if (droppedParams.length > 0) {
    // The translation's and the target's (what the chosen cloud target refuses: exchange) add up.
    const before = res.getHeader('x-gateway-dropped-params');
    res.setHeader('x-gateway-dropped-params', typeof before === 'string' && before !== '' ? `${before}, ${droppedParams.join(', ')}` : droppedParams.join(', '));
  }
}
