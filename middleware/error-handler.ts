/**
 * The one final error handler: renders a GatewayError in the route's shape (native or chat), and
 * writes its operator line, if it has one, with the request id. A stack overflow is a 400 (a body nested
 * too deeply); anything else is logged and answered as a 500 without internals. A reply already under way
 * cannot change status: its connection is closed instead.
 */
import type { ErrorRequestHandler } from 'express';
import { getContext } from '../lib/pipeline/context';
import { errors, formatChatError, formatNativeError, fromTranslationError, GatewayError } from '../lib/http/errors';
import { sendJson } from '../lib/http/json-reply';
import type { Logger } from '../lib/observability/logger';
import { boundReason } from '../lib/upstream/attempt-chain';
import { mapBodyParserError } from './json-body';

export function createErrorHandler(options: { logger: Logger; bodyLimitBytes: number }): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    const ctx = getContext(res);
    let error: GatewayError;
    const translated = fromTranslationError(err);
    if (translated) {
      error = translated;
    } else if (err instanceof GatewayError) {
      error = err;
      if (error.log) {
        const { message, ...fields } = error.log;
        options.logger.error({ message, request_id: ctx?.requestId, ...fields });
      }
    } else if (err instanceof RangeError && /call stack/i.test(err.message)) {
      // Only a request body nested deeper than a recursive step (JSON.stringify, a walk) can take
      // overflows the stack: the client's mistake, as failExchange answers it in an exchange.
      error = errors.invalidRequest('request body is nested too deeply');
    } else if (err && typeof err === 'object' && typeof (err as { type?: unknown }).type === 'string' && (err as { status?: number }).status) {
      error = mapBodyParserError(err as { type: string }, options.bodyLimitBytes);
    } else {
      options.logger.error({ message: 'unhandled error', request_id: ctx?.requestId, error: String((err as Error)?.stack ?? err) });
      error = errors.internal();
    }
    if (ctx) {
      ctx.errorCode = error.chatCode;
      // The log line and the request log record say why (after-response.ts, request-log.ts).
      ctx.error = { type: error.nativeType, message: boundReason(error.message) };
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    const body = ctx?.format === 'chat' ? formatChatError(error) : formatNativeError(error, ctx?.requestId);
    sendJson(res, error.status, body);
  };
}
