/**
 * The request log record of a finished request: counts and labels only, never a prompt, a
 * completion or a secret (an error's message is bounded and redacted: lib/upstream/attempt-chain.ts). The settlement step writes it with the usage, in the same store step, so
 * the log's credits over any day equal the day's totals.
 */
import type { Response } from 'express';
import type { RequestContext } from '../pipeline/context';
import type { RequestLogRecord } from '../store/types';
import { formatAttemptChain } from '../upstream/attempt-chain';

/**
 * Whether `ctx` gets a request log record: it reached the upstream step, or its key was identified
 * and the request refused (402, 403, 413, 429, ...: booked with 0 credits, so the operator sees why).
 */
export function isLoggedRequest(ctx: RequestContext, res: Response): boolean {
  if (ctx.upstreamReached === true) return true;
  // A refusal for the store's own outage (the guard's 503) is not written to the store that is out.
  return ctx.key !== undefined && res.statusCode >= 400 && ctx.errorCode !== 'service_unavailable';
}

/**
 * The record of `ctx` as it closes (`res` has its final status), booked at `time` (epoch ms) with
 * `credits` (the store replaces both by what it books).
 */
export function formatRequestLogRecord(ctx: RequestContext, res: Response, time: number, credits: number): RequestLogRecord {
  const usage = ctx.usage;
  return {
    time,
    requestId: ctx.requestId,
    keyId: ctx.key?.id ?? null,
    keyGroup: ctx.keyGroup ?? null,
    route: ctx.route,
    model: ctx.model?.id ?? null,
    status: res.statusCode,
    stopReason: ctx.stopReason ?? null,
    inputTokens: usage?.input_tokens ?? 0,
    outputTokens: usage?.output_tokens ?? 0,
    cacheCreationInputTokens: usage?.cache_creation_input_tokens ?? 0,
    cacheReadInputTokens: usage?.cache_read_input_tokens ?? 0,
    credits,
    firstByteMs: ctx.firstByteMs === undefined ? null : Math.round(ctx.firstByteMs * 100) / 100,
    durationMs: Math.round(Number(process.hrtime.bigint() - ctx.startedAt) / 1e4) / 100,
    streamed: ctx.stream,
    clientAborted: !res.writableFinished,
    sessionId: ctx.sessionId ?? null,
    agentId: ctx.agentId ?? null,
    upstreamTarget: ctx.upstreamTarget ?? null,
    errorType: ctx.error?.type ?? null,
    errorMessage: ctx.error?.message ?? null,
    upstreamAttempts: formatAttemptChain(ctx.attempts) ?? null,
  };
}
