/**
 * Reading a file upload (`POST /v1/files`) whole, bounded in size and in rate: the upload is held in
 * memory while it is sent upstream, so it is the one body besides JSON that a client could use to hold
 * a socket or memory.
 *
 * An upload over the limit is refused 413 without closing its connection under the client: a socket
 * closed on unread data is reset, and a reset can reach the client before the reply (what a plain
 * `req.destroy()` did). Up to `DISCARD_FACTOR` × the limit in all, the rest is read and dropped and
 * the connection kept for the next request; past that, the reply says `connection: close` and Node
 * closes the connection once the reply is out.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyTooSlow, watchBodyRate, type BodyRateOptions } from './body-rate';
import { errors, type GatewayError } from './errors';
import { sendDeferredContinue } from './http-server';

/** How much of a refused upload is read (and dropped) to keep its connection, as a multiple of the limit. */
const DISCARD_FACTOR = 2;

export interface UploadLimits {
  /** Largest upload kept, bytes (config `limits.fileBytes`). */
  limitBytes: number;
  /** The slow-client guard (config `limits.bodyTimeoutMs`, `limits.bodyMinBytesPerSecond`). */
  rate: BodyRateOptions;
}

/**
 * Read an upload whole.
 * @returns the body as received
 * @throws GatewayError 413 when it is larger than `limitBytes` (at once when its `content-length` says
 *   so, else once it ends or passes `DISCARD_FACTOR` × the limit); 408 (connection closed) when it
 *   trickles in slower than `rate`; 400 when the client leaves before its end
 */
export function readUpload(req: IncomingMessage, res: ServerResponse, limits: UploadLimits): Promise<Buffer> {
  const { limitBytes, rate } = limits;
  const tooLarge = (close: boolean) => {
    const err = errors.tooLarge(`file upload larger than ${limitBytes} bytes (limits.fileBytes)`);
    if (close) err.headers.connection = 'close';
    return err;
  };
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) {
    // Not a byte read: Node's server drops the declared rest after the reply; the guard cuts a trickle.
    // A client waiting on `Expect: 100-continue` is not asked for its body at all.
    // The watch stops itself when the request ends or closes.
    watchBodyRate(req, rate, () => req.socket.destroy());
    return Promise.reject(tooLarge(declared > DISCARD_FACTOR * limitBytes));
  }
  // The key was checked: a client waiting on `Expect: 100-continue` may send its upload now.
  sendDeferredContinue(req, res);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const fail = (err: GatewayError) => {
      stop();
      // Dropped until the connection closes: a paused request would stall the client's writes.
      req.on('data', () => undefined);
      reject(err);
    };
    const stopWatch = watchBodyRate(req, rate, () => fail(bodyTooSlow(rate.minBytesPerSecond)));
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) chunks.push(chunk);
      else if (size > DISCARD_FACTOR * limitBytes) fail(tooLarge(true));
      else chunks.length = 0;
    };
    const onEnd = () => {
      stop();
      if (size > limitBytes) reject(tooLarge(false));
      else resolve(Buffer.concat(chunks, size));
    };
    const onAborted = () => fail(errors.invalidRequest('file upload was incomplete'));
    function stop() {
      stopWatch();
      req.off('data', onData).off('end', onEnd).off('error', onAborted).off('close', onAborted);
    }
    // 'close' before 'end': the client left (or the socket was closed) mid-upload.
    req.on('data', onData).once('end', onEnd).once('error', onAborted).once('close', onAborted);
  });
}
