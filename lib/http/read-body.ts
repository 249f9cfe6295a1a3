/** Reading a whole (bounded) reply body from a stream. */
import type { Readable } from 'node:stream';

/**
 * Collect a stream into one Buffer.
 * @param limitBytes larger bodies reject with an Error (the stream is destroyed)
 */
export function readBody(stream: Readable, limitBytes = 64 * 1024 * 1024): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        stream.destroy();
        reject(new Error(`reply body larger than ${limitBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    // One chunk (a small reply) is the body itself: no copy.
    stream.once('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    stream.once('error', reject);
    stream.once('aborted', () => reject(new Error('reply aborted')));
  });
}

/** JSON.parse that returns undefined instead of throwing. */
export function tryParseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
