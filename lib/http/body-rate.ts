/**
 * The slow-client guard: a request body that trickles in slower than a minimum rate is cut off, so a
 * slow-loris connection cannot hold a socket (and a worker's memory) for long.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from './errors';

export interface BodyRateOptions {
  /** Length of one measuring window, in ms. */
  windowMs: number;
  /** Bytes per second the body must average over every window while it is incomplete; 0 turns the guard off. */
  minBytesPerSecond: number;
}

/**
 * Measure a request body as it arrives (from the socket's byte count, so the body's own stream is
 * left untouched for its parser). `onTooSlow` runs once when a window ends with the body incomplete
 * and fewer than `minBytesPerSecond × windowMs / 1000` bytes received during it.
 * @returns stop(), to call once the body is complete or the request is over
 */
export function watchBodyRate(req: IncomingMessage, options: BodyRateOptions, onTooSlow: () => void): () => void {
  if (options.minBytesPerSecond <= 0 || req.complete) return () => {};
  const socket = req.socket;
  const needed = (options.minBytesPerSecond * options.windowMs) / 1000;
  let last = socket.bytesRead;
  const timer = setInterval(() => {
    if (req.complete || socket.destroyed) return stop();
    const received = socket.bytesRead - last;
    last = socket.bytesRead;
    if (received < needed) {
      stop();
      onTooSlow();
    }
  }, options.windowMs);
  timer.unref();
  function stop() {
    clearInterval(timer);
  }
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}

/** The refusal of a body that came slower than `minBytesPerSecond`: 408, its connection closed. */
export function bodyTooSlow(minBytesPerSecond: number): GatewayError {
  return new GatewayError(408, 'invalid_request_error', `request body arrived slower than ${minBytesPerSecond} bytes per second; send it at once`,
    { chatCode: 'request_timeout', headers: { connection: 'close' } });
}
