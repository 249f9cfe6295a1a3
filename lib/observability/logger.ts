/** The winston logger: one JSON object per line on stdout. Never give it a secret. */
import { AsyncLocalStorage } from 'node:async_hooks';
import winston from 'winston';

export type Logger = winston.Logger;

/** The request being handled in the current async context (set by the request-context step). */
export const requestScope = new AsyncLocalStorage<{ requestId: string }>();

const TAGGED = Symbol.for('model-gateway.request-id-meta');

/**
 * Make a logger stamp every line with `request_id` of the request in scope (idempotent). Done through
 * winston's `defaultMeta`, read when a line is logged (a format could run later, out of scope, when the
 * logger's stream is backed up). Loggers from `createLogger` already do this; the app applies it to a
 * logger an integrator passes in. Existing `defaultMeta` is kept.
 */
export function withRequestIds(logger: Logger): Logger {
  const marked = logger as Logger & { [TAGGED]?: boolean };
  if (marked[TAGGED]) return logger;
  let base: Record<string, unknown> | null = (logger.defaultMeta as Record<string, unknown> | undefined) ?? null;
  Object.defineProperty(logger, 'defaultMeta', {
    configurable: true,
    get() {
      const scope = requestScope.getStore();
      return scope ? { ...base, request_id: scope.requestId } : base;
    },
    set(value: Record<string, unknown> | null) {
      base = value;
    },
  });
  marked[TAGGED] = true;
  return logger;
}

/** The formatted line winston's formats leave on a log entry (triple-beam's MESSAGE). */
const MESSAGE = Symbol.for('message');

/** logform's JSON format, for the lines `JSON.stringify` cannot write (cycles, BigInt values). */
const jsonFallback = winston.format.json({ deterministic: false });

/**
 * The line format: the entry as one JSON line in the order its members were written (message first),
 * an ISO 8601 UTC `timestamp` added last. The lines of `combine(timestamp(), json())`, in one step;
 * kept for speed: logform's json sets up safe-stable-stringify for every line (bench/RESULTS.md).
 */
export const jsonLineFormat = winston.format((info) => {
  info.timestamp = new Date().toISOString();
  try {
    (info as Record<string | symbol, unknown>)[MESSAGE] = JSON.stringify(info);
    return info;
  } catch {
    return jsonFallback.transform(info, jsonFallback.options);
  }
});

/** A JSON-lines logger at `level` (error, warn, info, debug) on stdout, each line with an ISO `timestamp`. */
export function createLogger(level = 'info'): Logger {
  return withRequestIds(winston.createLogger({
    level,
    format: jsonLineFormat(),
    transports: [new winston.transports.Console()],
  }));
}
