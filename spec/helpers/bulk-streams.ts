/**
 * Long streamed replies and clients that read them slowly or not at all, for the backpressure tests:
 * a native or chat-completions upstream stream of one text delta repeated (written no faster than the
 * gateway reads it, fake-upstream.ts), a raw socket client that sends its request and stops reading,
 * one that reads at a set pace, and a process's resident memory.
 */
import fs from 'node:fs';
import net from 'node:net';
import type { FakeReply } from './fake-upstream';

/**
 * A bulk stream's size: `times` deltas of `piece`, and the usage its end reports. `varied`: each delta
 * is instead as many random letters and spaces as `piece` has characters, so a copy of the text the
 * gateway keeps compresses no better than prose (worse: random letters deflate to some 60 %).
 */
export interface BulkShape {
  piece: string;
  times: number;
  usage: { input_tokens: number; output_tokens: number };
  varied?: boolean;
}

/** The text of the `i`-th delta of `shape`: its piece, or `shape.piece.length` random letters and spaces (seeded by `i`). */
function deltaText(shape: BulkShape, i: number): string {
  if (!shape.varied) return shape.piece;
  let seed = i + 1;
  let text = '';
  for (let j = 0; j < shape.piece.length; j++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    text += 'abcdefghijklmnopqrstuvwxyz '[Math.floor((seed / 2 ** 31) * 27)];
  }
  return text;
}

/** The bulk of a stream of `shape`: its deltas written as they are read, each from `record(text)`. */
function bulkDeltas(shape: BulkShape, sent: { bytes: number }, record: (text: string) => string) {
  const same = shape.varied ? undefined : record(shape.piece);
  return { raw: same ?? ((i: number) => record(deltaText(shape, i))), times: shape.times, sent };
}

/** A native stream of `shape.times` text deltas of `shape.piece` (the API's event order, wire-formats.md §2); `sent` counts the deltas' bytes written. */
export function bulkNativeReply(model: string, shape: BulkShape, sent: { bytes: number }): FakeReply {
  const delta = (text: string) => `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })}\n\n`;
  return {
    kind: 'stream',
    events: [
      { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_bulk', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: shape.usage.input_tokens, output_tokens: 1 } } } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      bulkDeltas(shape, sent, delta),
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: shape.usage.output_tokens } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ],
  };
}

/**
 * A chat-completions stream of `shape.times` content deltas of `shape.piece`, then the finish chunk,
 * the usage chunk (asked with `stream_options.include_usage`, so every chunk carries `usage: null`) and
 * `[DONE]`; `sent` counts the deltas' bytes written.
 */
export function bulkChatReply(model: string, shape: BulkShape, sent: { bytes: number }): FakeReply {
  const base = { id: 'chatcmpl-bulk', object: 'chat.completion.chunk', created: 1723031665, model };
  const record = (choices: unknown[], usage: unknown = null) => `data: ${JSON.stringify({ ...base, choices, usage })}\n\n`;
  const chunk = (choices: unknown[], usage: unknown = null) => ({ raw: record(choices, usage) });
  const { input_tokens: prompt_tokens, output_tokens: completion_tokens } = shape.usage;
  return {
    kind: 'stream',
    events: [
      chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]),
      bulkDeltas(shape, sent, (content) => record([{ index: 0, delta: { content }, logprobs: null, finish_reason: null }])),
      chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]),
      chunk([], { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens }),
      { raw: 'data: [DONE]\n\n' },
    ],
  };
}

/** An HTTP/1.1 POST of `body` as JSON, as bytes on the wire. */
function postBytes(path: string, headers: Record<string, string>, body: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(body));
  const head = Object.entries({ host: '127.0.0.1', 'content-type': 'application/json', 'content-length': String(json.length), connection: 'close', ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\n${head}\r\n`), json]);
}

/**
 * A client that sends its request and never reads the reply: the socket is paused at once, so it
 * takes no more than its own buffers hold. Resolves once connected and the request is written.
 */
export function openStalledClient(baseUrl: string, path: string, headers: Record<string, string>, body: unknown): Promise<net.Socket> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) }, () => {
      socket.pause();
      socket.write(postBytes(path, headers, body), () => resolve(socket));
    });
    socket.once('error', reject);
  });
}

/**
 * A client that reads the whole reply (head and chunked body as raw bytes) at about `bytesPerTick`
 * bytes every `tickMs`: after each slice it pauses its socket for `tickMs`. Resolves with every byte
 * received, once the body's last chunk has come (an SSE reply keeps the connection open) or the
 * gateway closes the connection.
 */
export function readSlowly(baseUrl: string, path: string, headers: Record<string, string>, body: unknown, pace: { bytesPerTick: number; tickMs: number }): Promise<Buffer> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let sinceTick = 0;
    const socket = net.connect({ host: hostname, port: Number(port) }, () => socket.write(postBytes(path, headers, body)));
    let tail = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      tail = Buffer.concat([tail, chunk]).subarray(-7);
      // An SSE body's data ends in a blank line, so only the last chunk's framing ends like this.
      if (tail.toString('latin1') === '\r\n0\r\n\r\n') {
        socket.destroy();
        return resolve(Buffer.concat(chunks));
      }
      sinceTick += chunk.length;
      if (sinceTick < pace.bytesPerTick) return;
      sinceTick = 0;
      socket.pause();
      setTimeout(() => socket.resume(), pace.tickMs);
    });
    socket.once('end', () => resolve(Buffer.concat(chunks)));
    socket.once('error', reject);
  });
}

/** The body of a raw HTTP/1.1 reply with chunked transfer coding, decoded; throws when the framing is broken or the last chunk is missing. */
export function decodeChunkedBody(reply: Buffer): Buffer {
  let at = reply.indexOf('\r\n\r\n') + 4;
  const parts: Buffer[] = [];
  for (;;) {
    const lineEnd = reply.indexOf('\r\n', at);
    const size = parseInt(reply.subarray(at, lineEnd).toString('latin1'), 16);
    if (lineEnd === -1 || Number.isNaN(size)) throw new Error(`broken chunk framing at byte ${at}`);
    if (size === 0) return Buffer.concat(parts);
    parts.push(reply.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** Resident memory of process `pid` in bytes (Linux: VmRSS of /proc/<pid>/status). */
export function residentBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}
