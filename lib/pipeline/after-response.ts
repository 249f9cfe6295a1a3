/**
 * The finish step, run once per request when its response closes: settle what the request used and
 * write the one log line. Both routes report the same facts here (usage, stop reason, status).
 */
import type { Request, Response } from 'express';
import type { RequestContext } from './context';
import { InFlight } from '../http/in-flight';
import type { Logger } from '../observability/logger';
import { formatServerSpanAttributes } from '../observability/trace-attributes';
import { formatAttemptChain } from '../upstream/attempt-chain';

export type AfterResponseStep = (ctx: RequestContext, res: Response) => void | Promise<void>;

export interface AfterResponseOptions {
  logger: Logger;
  /** Run before the log line, in order (credit settlement first). Failures are logged, never thrown. */
  hooks?: AfterResponseStep[];
}

/** The `onFinish` callback, and a way to wait for the finish steps still running (graceful shutdown). */
export interface AfterResponse {
  (ctx: RequestContext, req: Request, res: Response): void;
  /** Resolves once every finish step started so far (settlement, log line) is done. */
  settled(): Promise<void>;
}

/** Build the `onFinish` callback of the request-context middleware. */
export function createAfterResponse(options: AfterResponseOptions): AfterResponse {
  const { logger } = options;
  const hooks = options.hooks ?? [];
  // Finish steps under way (a count, not a Set of their promises: see lib/http/in-flight.ts).
  const running = new InFlight();
  const finish = (ctx: RequestContext, _req: Request, res: Response) => {
    running.begin();
    void (async () => {
      try {
        for (const hook of hooks) {
          try {
            await hook(ctx, res);
          } catch (err) {
            logger.error({ message: 'finish step failed', request_id: ctx.requestId, error: (err as Error).message });
          }
        }
        const line: Record<string, unknown> = {
          message: 'request',
          request_id: ctx.requestId,
          route: ctx.route,
          status: res.statusCode,
          latency_ms: Math.round(Number(process.hrtime.bigint() - ctx.startedAt) / 1e4) / 100,
        };
        if (ctx.key) {
          line.key_id = ctx.key.id;
          line.key_last4 = ctx.key.last4;
        }
        if (ctx.keyGroup) line.key_group = ctx.keyGroup;
        if (ctx.model) line.model = ctx.model.id;
        if (ctx.upstreamTarget !== undefined) line.upstream_target = ctx.upstreamTarget;
        if (ctx.sessionId !== undefined) line.session_id = ctx.sessionId;
        if (ctx.stream) line.stream = true;
        if (ctx.usage) {
          line.input_tokens = ctx.usage.input_tokens + ctx.usage.cache_creation_input_tokens + ctx.usage.cache_read_input_tokens;
          line.output_tokens = ctx.usage.output_tokens;
        }
        if (Object.keys(ctx.tags).length > 0) line.tags = { ...ctx.tags };
        if (ctx.droppedTools) line.dropped_tools = ctx.droppedTools;
        if (ctx.firstByteMs !== undefined) line.first_byte_ms = Math.round(ctx.firstByteMs * 100) / 100;
        if (!res.writableFinished) line.aborted = true;
        // Why it failed: the error the client got and, once an upstream attempt failed, every attempt.
        if (ctx.error) {
          line.error_type = ctx.error.type;
          line.error_message = ctx.error.message;
        }
        if (ctx.attempts) line.upstream_attempts = formatAttemptChain(ctx.attempts);
        // After every finish step: the settlement is inside the server span.
        ctx.trace?.end(formatServerSpanAttributes(ctx, res.statusCode), res.statusCode);
        logger.info(line);
      } catch (err) {
        logger.error({ message: 'finish step failed', request_id: ctx.requestId, error: (err as Error).message });
      } finally {
        running.end();
      }
    })();
  };
  return Object.assign(finish, {
    settled: () => running.idle(),
  });
}
