/**
 * Reading an upstream reply for the routes: a whole native message (its usage and stop reason recorded),
 * the model rename a reply needs, and an SSE stream followed as it arrives (one parse per chunk, its end,
 * loss or idle timeout reported once).
 */
import type http from 'node:http';
import type { ModelConfig } from '../lib/config';
import { errors } from '../lib/http/errors';
import { tryParseJson } from '../lib/http/read-body';
import { createSseDecoder, type SseEvent } from '../lib/http/sse';
import { recordReply, type RequestContext } from '../lib/pipeline/context';
import type { NativeUsage } from '../translators/native-types';
import { emptyUsage, mergeNativeUsage } from '../translators/usage';

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

export interface UpstreamStreamHandlers {
  /** The bytes of one upstream chunk, before its events are parsed (the native proxy passes them on). */
  onChunk?(chunk: Buffer): void;
  /** One parsed SSE event, in the tick it was parsed. */
  onEvent(event: SseEvent): void;
  /** The events of one upstream chunk have all been reported, in the same tick (StreamWriter's `flush`). */
  onChunkParsed?(): void;
  /** The upstream ended its reply normally. */
  onEnd(): void;
  /** The connection was lost, or the stream went idle (`idle` true). Called at most once. */
  onLost(message: string, idle: boolean): void;
}

/** Parse an upstream SSE reply as it arrives (eventsource-parser, lib/http/sse.ts) and report its end, loss or idle timeout once. */
export function followUpstreamStream(response: http.IncomingMessage, handlers: UpstreamStreamHandlers): void {
  let settled = false;
  const decoder = createSseDecoder(handlers.onEvent);
  response.on('data', (chunk: Buffer) => {
    handlers.onChunk?.(chunk);
    decoder.write(chunk);
    handlers.onChunkParsed?.();
  });
  response.once('end', () => {
    decoder.end();
    if (settled) return;
    settled = true;
    handlers.onEnd();
  });
  const lost = (message: string, idle = false) => {
    if (settled) return;
    settled = true;
    handlers.onLost(message, idle);
  };
  // A reset socket emits `error` then `close` without `end`; an idle stream is destroyed with UPSTREAM_IDLE.
  response.once('error', (err: NodeJS.ErrnoException) =>
    err.code === 'UPSTREAM_IDLE' ? lost(err.message, true) : lost('the upstream connection was lost mid-stream'));
  response.once('close', () => lost('the upstream connection was lost mid-stream'));
}
