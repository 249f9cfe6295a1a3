/**
 * A local fake native upstream for tests: records every request and answers with what the test
 * scripts (a JSON reply, an error, or an SSE stream with optional pauses between events), unless
 * the real API would refuse the request (api-rules.ts: then the API's 400).
 */
import http from 'node:http';
import { listenOnLoopback } from '../../lib/http/loopback';
import { writeWithBackpressure } from '../../lib/http/sse';
import { billingFieldRefusal, createApiJudge } from './api-rules';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (the text when it is not JSON). */
  body: any;
  /** The body's bytes as received. */
  raw: Buffer;
  /** The port the request's connection came from: requests sent on one kept-alive socket share it. */
  remotePort?: number;
}

/** What the fake upstream does with one request. */
export type FakeReply =
  | { kind: 'json'; status?: number; body: unknown; headers?: Record<string, string>; delayMs?: number; statusText?: string }
  | { kind: 'text'; status?: number; text: string; contentType: string }
  | { kind: 'stream'; events: StreamItem[]; status?: number; destroyAtEnd?: boolean; onEnd?: () => void; delayMs?: number }
  | { kind: 'hang' }
  | { kind: 'destroy' };

/**
 * One step of a scripted stream: a native event, raw bytes, a pause, a gate (`until`) that holds
 * the rest of the stream until the promise settles (to observe what the client got so far), or a
 * bulk of `raw` written `times` times as fast as the reader takes it (waiting for `drain`, as a real
 * server's socket does; a function gives the i-th write), `sent.bytes` counting what was written so far.
 */
export type StreamItem =
  | { event: string; data: unknown }
  | { pauseMs: number }
  | { raw: string }
  | { until: Promise<unknown> }
  | { raw: string | ((i: number) => string); times: number; sent: { bytes: number } };

export type FakeHandler = (request: RecordedRequest) => FakeReply;

export interface FakeUpstream {
  url: string;
  requests: RecordedRequest[];
  /** Replace the handler used for the next requests. */
  setHandler(handler: FakeHandler): void;
  /** Resolves when the socket of the n-th request (0-based) closes. */
  socketClosed(index: number): Promise<number>;
  close(): Promise<void>;
}

/** A native message body with the given text and usage. */
export function nativeMessage(text: string, usage = { input_tokens: 10, output_tokens: 5 }, model = 'model-sonnet-4.6'): Record<string, unknown> {
  return {
    id: 'msg_fake_1', type: 'message', role: 'assistant', model, content: [{ type: 'text', text }],
    stop_reason: 'end_turn', stop_sequence: null, usage,
  };
}

/** The events of a streamed native text reply, one delta per piece. */
export function nativeTextEvents(pieces: string[], usage = { input_tokens: 10, output_tokens: 5 }, model = 'model-sonnet-4.6'): Array<{ event: string; data: unknown }> {
  return [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_fake_1', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'ping', data: { type: 'ping' } },
    ...pieces.map((text) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output_tokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
}


/** Token counts a fake reply bills: the reply's own, and optionally a compaction step's and server tool counts. */
export interface FakeTokens {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  /** Of the cache writes, those to the 1-hour cache. */
  cache_1h_input_tokens?: number;
  web_search_requests?: number;
  web_fetch_requests?: number;
  /** Tokens of the server-side compaction step, when the request asked for one. */
  compaction?: { input_tokens: number; output_tokens: number };
}

/**
 * The `usage` object the real API reports for a request `body` billed `tokens`:
 * - `cache_creation` splits the writes by lifetime (prompt caching page);
 * - `server_tool_use` counts web searches and fetches (web search / web fetch tool pages);
 * - `service_tier`: `standard` (`batch` for a Message Batches result) (API reference, Messages);
 * - `inference_geo`: the request's, else `global` (data residency page: "The response usage object
 *   includes an inference_geo field indicating where inference ran");
 * - `speed`: `fast` when the request asked for fast mode, else `standard` (fast mode page);
 * - `iterations` when a compaction ran: the compaction step first, then the message step, whose counts
 *   are the top-level ones ("the top-level input_tokens and output_tokens do not include compaction
 *   iteration usage", compaction page, platform.claude.com/docs/en/build-with-claude/compaction).
 */
export function reportedUsage(body: any, tokens: FakeTokens, serviceTier = 'standard'): Record<string, unknown> {
  const writes = tokens.cache_creation_input_tokens ?? 0;
  const oneHour = tokens.cache_1h_input_tokens ?? 0;
  const top = {
    input_tokens: tokens.input_tokens, output_tokens: tokens.output_tokens,
    cache_creation_input_tokens: writes, cache_read_input_tokens: tokens.cache_read_input_tokens ?? 0,
  };
  return {
    ...top,
    cache_creation: { ephemeral_5m_input_tokens: writes - oneHour, ephemeral_1h_input_tokens: oneHour },
    server_tool_use: { web_search_requests: tokens.web_search_requests ?? 0, web_fetch_requests: tokens.web_fetch_requests ?? 0 },
    service_tier: serviceTier,
    inference_geo: typeof body?.inference_geo === 'string' ? body.inference_geo : 'global',
    speed: body?.speed === 'fast' ? 'fast' : 'standard',
    ...(tokens.compaction ? { iterations: [{ type: 'compaction', ...tokens.compaction }, { type: 'message', ...top }] } : {}),
  };
}

/**
 * What the real API refuses of a request's billing fields, as a 400 `invalid_request_error` body, or
 * null (api-rules.ts `billingFieldRefusal`, which every fake upstream applies).
 */
export function refusedBillingFields(body: any): Record<string, unknown> | null {
  const message = billingFieldRefusal(body);
  return message === null ? null : { type: 'error', error: { type: 'invalid_request_error', message } };
}

/** Default behaviour: a text reply (streamed when asked) echoing the model it was sent. */
export const defaultHandler: FakeHandler = (request) => {
  if (request.url.startsWith('/v1/messages/count_tokens')) return { kind: 'json', body: { input_tokens: 42 } };
  if (request.body?.stream) return { kind: 'stream', events: nativeTextEvents(['Hello', ', world'], undefined, request.body.model) };
  return { kind: 'json', body: nativeMessage('Hello, world', undefined, request.body?.model) };
};

/** Write `item.raw` `item.times` times, waiting for `drain` whenever the socket's buffer is full; stops when the reply is destroyed. */
export async function writeBulk(res: http.ServerResponse, item: { raw: string | ((i: number) => string); times: number; sent: { bytes: number } }): Promise<void> {
  const same = typeof item.raw === 'string' ? Buffer.from(item.raw) : undefined;
  for (let i = 0; i < item.times && !res.destroyed; i++) {
    const bytes = same ?? Buffer.from((item.raw as (i: number) => string)(i));
    item.sent.bytes += bytes.length;
    await writeWithBackpressure(res, bytes);
  }
}

/**
 * Start a fake upstream on loopback. With `apiRules` (default true) every message request is judged
 * as the real API would judge it (api-rules.ts) before the handler answers. `port`: default 0 (any
 * free one). `record`: keep every request in `requests` (default true; the long-running command line,
 * fake-upstream-cli.ts, keeps none).
 */
export async function startFakeUpstream(handler: FakeHandler = defaultHandler, options: { apiRules?: boolean; port?: number; record?: boolean } = {}): Promise<FakeUpstream> {
  let current = handler;
  const api = options.apiRules === false ? { judge: () => null, note: () => undefined } : createApiJudge();
  const requests: RecordedRequest[] = [];
  const closed: Array<{ promise: Promise<number>; resolve: (t: number) => void }> = [];
  const slot = (i: number) => {
    while (closed.length <= i) {
      let resolve!: (t: number) => void;
      const promise = new Promise<number>((r) => (resolve = r));
      closed.push({ promise, resolve });
    }
    return closed[i];
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      const text = raw.toString('utf8');
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      const index = requests.length;
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, raw, remotePort: req.socket.remotePort };
      if (options.record !== false) {
        requests.push(recorded);
        res.once('close', () => slot(index).resolve(Date.now()));
      }
      const reply = api.judge(recorded) ?? current(recorded);
      api.note(reply);
      if (reply.kind === 'hang') return;
      if (reply.kind === 'destroy') return req.socket.destroy();
      if (reply.kind === 'text') {
        res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType, 'request-id': 'req_upstream_1' });
        res.end(reply.text);
        return;
      }
      if (reply.kind === 'json') {
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
        if (res.destroyed) return;
        const payload = JSON.stringify(reply.body);
        if (reply.statusText !== undefined) res.statusMessage = reply.statusText;
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', 'request-id': 'req_upstream_1', ...reply.headers });
        res.end(payload);
        return;
      }
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (res.destroyed) return;
      res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', 'request-id': 'req_upstream_1' });
      for (const item of reply.events) {
        if (res.destroyed) return;
        if ('pauseMs' in item) await new Promise((r) => setTimeout(r, item.pauseMs));
        else if ('until' in item) await item.until.catch(() => undefined);
        else if ('times' in item) await writeBulk(res, item);
        else if ('raw' in item) res.write(item.raw);
        else res.write(`event: ${item.event}\ndata: ${JSON.stringify(item.data)}\n\n`);
      }
      if (reply.destroyAtEnd) req.socket.destroy();
      else res.end();
      reply.onEnd?.();
    });
  });
  const { url, close } = await listenOnLoopback(server, options.port);
  return {
    url,
    requests,
    setHandler(next) {
      current = next;
    },
    socketClosed: (i) => slot(i).promise,
    close,
  };
}
