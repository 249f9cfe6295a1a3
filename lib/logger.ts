/** The winston logger: one JSON object per line on stdout. Never give it a secret. */
import { AsyncLocalStorage } from 'node:async_hooks';
import winston from 'winston';
import TransportStream from 'winston-transport';

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

/** Where a {@link BatchedLineTransport} writes: process.stdout by default. */
export interface LineDestination {
  write(text: string): unknown;
}

/** Transports with lines not yet written; the process `exit` event writes them (synchronously). */
const unflushed = new Set<BatchedLineTransport>();
let exitHookInstalled = false;

/**
 * A winston transport that writes each formatted line to `destination`, batched: the lines logged in
 * one turn of the event loop leave in one write, in order, at the next `setImmediate`. Kept for speed
 * (bench/RESULTS.md, "Mechanisms kept for speed"): winston's Console transport writes once per line
 * (process.stdout writes to files and pipes are synchronous: one blocking system call per request
 * under load) and schedules a `setImmediate` per line as well. Nothing is lost at exit: pending lines
 * are written on the process `exit` event (stdout writes to files, pipes and terminals are synchronous
 * there) and when the transport closes.
 */
export class BatchedLineTransport extends TransportStream {
  private pending = '';
  private readonly destination: LineDestination;

  constructor(options: TransportStream.TransportStreamOptions & { destination?: LineDestination } = {}) {
    super(options);
    this.destination = options.destination ?? process.stdout;
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.once('exit', () => {
        for (const transport of unflushed) transport.flush();
      });
    }
  }

  override log(info: Record<string | symbol, unknown>, callback: () => void): void {
    if (this.pending === '') {
      unflushed.add(this);
      setImmediate(() => this.flush());
    }
    this.pending += `${info[MESSAGE] as string}\n`;
    callback();
  }

  /** Write the pending lines now (one write). */
  flush(): void {
    unflushed.delete(this);
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.destination.write(text);
  }

  override close(): void {
    this.flush();
  }
}

/** logform's JSON format, for the lines `JSON.stringify` cannot write (cycles, BigInt values). */
const jsonFallback = winston.format.json();

/**
 * The line format: the whole entry as one JSON line, in the order its members were written (message
 * first), with an ISO 8601 UTC `timestamp` added last, in one pass. The lines of
 * `combine(timestamp(), json())` but for the timestamp's place; kept for speed: it skips a second
 * format step and logform's per-line safe-stable-stringify set-up, which every request's log line paid
 * for (bench/RESULTS.md).
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

/** A JSON-lines logger at `level` (error, warn, info, debug) on stdout, each line with an ISO `timestamp`, lines batched per event-loop turn. */
export function createLogger(level = 'info'): Logger {
  return withRequestIds(winston.createLogger({
    level,
    format: jsonLineFormat(),
    transports: [new BatchedLineTransport()],
  }));
}
