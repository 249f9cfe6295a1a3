/**
 * First step: creates the per-request context, sets the `request-id` / `x-request-id` headers, and
 * runs the finish step (settle, log) once when the response closes, whatever ended it.
 */
import type { RequestHandler, Request, Response } from 'express';
import { randomId } from '../lib/keys/secrets';
import type { RequestContext } from '../lib/pipeline/context';
import { requestScope } from '../lib/observability/logger';
import { routeLabel } from '../lib/pipeline/route-table';
import type { Tracing } from '../lib/observability/tracing';

export interface RequestContextOptions {
  /** Called once per request when the response has closed (finished or aborted). */
  onFinish(ctx: RequestContext, req: Request, res: Response): void;
  /**
   * Handle the request inside the logger's request scope (lib/observability/logger.ts `requestScope`), so that lines
   * other code writes through the gateway's logger while it runs (integrator hooks and middleware, the
   * warnings of a store failing open) carry its `request_id`. Default true. On Node 20 an AsyncLocalStorage
   * in use costs every promise an async hook, so a gateway in which no such code runs leaves it out
   * (see `needsRequestScope` in lib/gateway.ts); the gateway's own lines name the request themselves.
   */
  scope?: boolean;
  /** Tracing (lib/observability/tracing.ts): each request gets its server span here. Default: none (off). */
  tracing?: Tracing | null;
}

/** Route format by path: chat-completions and Responses paths render errors in the chat (OpenAI) shape, all others native. */
export function detectFormat(path: string): RequestContext['format'] {
  return /^\/(v1\/)?(chat|responses)(\/|$)/.test(path) ? 'chat' : 'native';
}

export function createRequestContext(options: RequestContextOptions): RequestHandler {
  const scope = options.scope ?? true;
  const tracing = options.tracing ?? null;
  // One listener for every response (it finds its request and context on the response), rather than
  // a closure per request.
  function onClose(this: Response): void {
    options.onFinish(this.locals.gateway as RequestContext, this.req, this);
  }
  return (req, res, next) => {
    const ctx: RequestContext = {
      requestId: `req_${randomId(24)}`,
      format: detectFormat(req.path),
      route: `${req.method} ${req.path}`,
      startedAt: process.hrtime.bigint(),
      stream: false,
      warnings: [],
      tags: {},
    };
    // Named by the route table's label (lib/pipeline/route-table.ts), so a span name never carries what a client made up.
    if (tracing) ctx.trace = tracing.startRequest(req, routeLabel(ctx.route));
    res.locals.gateway = ctx;
    res.setHeader('request-id', ctx.requestId);
    res.setHeader('x-request-id', ctx.requestId);
    res.once('close', onClose);
    // Every log line written while this request is handled carries its id (lib/observability/logger.ts).
    if (scope) requestScope.run({ requestId: ctx.requestId }, next);
    else next();
  };
}
