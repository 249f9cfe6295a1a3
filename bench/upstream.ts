/**
 * Bench child: the fake native upstream. It answers `POST /v1/messages` the way the real one does,
 * decided by the request body alone (so a translated chat request gets the same reply as a native one):
 * - `stream: true` -> an SSE reply, else a JSON message;
 * - `max_tokens` -> how many deltas the stream has (1..2000);
 * - a non-empty `tools` array -> a `tool_use` block (input_json_delta deltas), else a text block;
 * - a system prompt containing `first token after N ms` -> in `burst` mode, a JSON reply N ms late, or a
 *   stream whose head, message_start and block start come at once and the rest N ms later.
 *
 * Modes, switched by the parent over IPC (`mode`):
 * - `burst` (default): the whole reply in one write, after `delayMs` (0: at once). The throughput scenarios.
 * - `paced`: one write per event, `gapMs` apart; each delta carries its send time as `t=<ms>;` so the
 *   client can tell how long the proxy held it (clocks: performance.timeOrigin + now(), shared by the host).
 * - `hold`: message_start, the block start and one delta, then one delta per held stream every second
 *   (spread over the second) until `release`, which finishes them all. The open-streams memory test.
 *
 * Usage: node dist/bench/upstream.js
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { serveChild } from './ipc';

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

type Mode = { name: 'burst'; delayMs: number } | { name: 'paced'; gapMs: number } | { name: 'hold' };

const MAX_DELTAS = 2000;

/** Absolute high-resolution time in ms, comparable across processes on this host. */
function now(): number {
  return performance.timeOrigin + performance.now();
}

function usage(output: number) {
  return { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: output };
}

/** The non-streaming reply (wire-formats.md §2). */
function buildMessage(model: string, tools: boolean): Record<string, unknown> {
  const content = tools
    ? [{ type: 'tool_use', id: 'toolu_bench_01', name: 'get_weather', input: { city: 'Paris', unit: 'celsius' } }]
    : [{ type: 'text', text: 'Hello from the bench upstream. This reply is about as long as a short answer.' }];
  return {
    id: 'msg_bench_01', type: 'message', role: 'assistant', model, content,
    stop_reason: tools ? 'tool_use' : 'end_turn', stop_sequence: null, usage: usage(20),
  };
}

/**
 * The events of a streamed reply (wire-formats.md §3), with `deltas` content_block_delta events.
 * Tool replies stream the input as JSON fragments: `{"note": "`, then text pieces, then `"}`.
 */
function buildEvents(model: string, deltas: number, tools: boolean): SseEvent[] {
  const block = tools
    ? { type: 'tool_use', id: 'toolu_bench_01', name: 'get_weather', input: {} }
    : { type: 'text', text: '' };
  const pieces = Array.from({ length: deltas }, (_, i) => `word${i} `);
  if (tools) {
    pieces[0] = '{"note": "';
    pieces[deltas - 1] = '"}';
  }
  return [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_bench_01', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(1) } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: block } },
    ...pieces.map((piece) => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index: 0, delta: tools ? { type: 'input_json_delta', partial_json: piece } : { type: 'text_delta', text: piece } },
    })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: tools ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: deltas } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
}

function formatEvent(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** A delta whose text (or JSON fragment) is the time it was sent. Tool fragments stay inside the JSON string. */
function stampedDelta(tools: boolean): string {
  const stamp = `t=${now().toFixed(3)};`;
  const delta = tools ? { type: 'input_json_delta', partial_json: stamp } : { type: 'text_delta', text: stamp };
  return formatEvent({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } });
}

/**
 * Pre-built burst replies, as [the whole reply, what a delayed stream sends at once, what it sends after
 * the first-token delay]: the upstream must cost the same for every proxy it is measured behind.
 */
const burstCache = new Map<string, [Buffer, Buffer, Buffer]>();

function burstReply(model: string, stream: boolean, deltas: number, tools: boolean): [Buffer, Buffer, Buffer] {
  const key = `${model}|${stream}|${deltas}|${tools}`;
  let reply = burstCache.get(key);
  if (!reply) {
    const events = buildEvents(model, deltas, tools).map(formatEvent);
    const whole = Buffer.from(stream ? events.join('') : JSON.stringify(buildMessage(model, tools)));
    reply = [whole, Buffer.from(events.slice(0, 2).join('')), Buffer.from(events.slice(2).join(''))];
    burstCache.set(key, reply);
  }
  return reply;
}

const DELAY_ASKED = /first token after (\d+) ms/;

/** The first-token delay a request's system prompt asks for (a string or text blocks), ms; undefined: none. */
function askedDelayMs(system: unknown): number | undefined {
  const text = typeof system === 'string' ? system : Array.isArray(system) ? system.map((block) => block?.text ?? '').join(' ') : '';
  const match = DELAY_ASKED.exec(text);
  return match ? Number(match[1]) : undefined;
}

interface HeldStream {
  res: http.ServerResponse;
  tail: string;
  tools: boolean;
}

let mode: Mode = { name: 'burst', delayMs: 0 };
const held = new Set<HeldStream>();
let holdTicker: NodeJS.Timeout | undefined;

function sendPaced(res: http.ServerResponse, events: SseEvent[], tools: boolean, gapMs: number): void {
  let i = 0;
  const next = () => {
    if (res.destroyed) return;
    const event = events[i++];
    if (!event) return void res.end();
    // The block's opening/closing fragments keep a tool input valid JSON; every other delta is stamped.
    const fragment = (event.data as any).delta?.partial_json;
    const stampable = event.event === 'content_block_delta' && fragment !== '{"note": "' && fragment !== '"}';
    res.write(stampable ? stampedDelta(tools) : formatEvent(event));
    setTimeout(next, event.event === 'content_block_delta' ? gapMs : 0);
  };
  next();
}

function startHeld(res: http.ServerResponse, events: SseEvent[], tools: boolean): void {
  const head = events.slice(0, 2).map(formatEvent).join('') + (tools ? formatEvent(events[2]) : '') + stampedDelta(tools);
  res.write(head);
  const stream: HeldStream = { res, tools, tail: (tools ? formatEvent(events[events.length - 4]) : '') + events.slice(-3).map(formatEvent).join('') };
  held.add(stream);
  res.once('close', () => held.delete(stream));
  if (!holdTicker) {
    // One delta per stream per second, spread over the second in 20 slices (real streams do not tick in step).
    let slice = 0;
    holdTicker = setInterval(() => {
      let i = 0;
      for (const each of held) if (i++ % 20 === slice) each.res.write(stampedDelta(each.tools));
      slice = (slice + 1) % 20;
    }, 50);
  }
}

function releaseHeld(): number {
  const count = held.size;
  for (const stream of held) stream.res.end(stream.tail);
  held.clear();
  if (holdTicker) clearInterval(holdTicker);
  holdTicker = undefined;
  return count;
}

function handle(req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end('{"type":"error","error":{"type":"invalid_request_error","message":"body is not JSON"}}');
    return;
  }
  const model = typeof body.model === 'string' ? body.model : 'unknown';
  const stream = body.stream === true;
  const deltas = Math.min(MAX_DELTAS, Math.max(1, Number(body.max_tokens) || 1));
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  const head = { 'content-type': stream ? 'text/event-stream; charset=utf-8' : 'application/json', 'request-id': 'req_bench_upstream' };

  if (mode.name === 'burst') {
    const [whole, first, rest] = burstReply(model, stream, tools && deltas < 3 ? 3 : deltas, tools);
    const asked = askedDelayMs(body.system);
    if (stream && asked !== undefined) {
      res.writeHead(200, head);
      res.write(first);
      setTimeout(() => res.destroyed || res.end(rest), asked);
      return;
    }
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(200, stream ? head : { ...head, 'content-length': whole.length });
      res.end(whole);
    };
    const delayMs = asked ?? mode.delayMs;
    if (delayMs > 0) setTimeout(send, delayMs);
    else send();
    return;
  }
  if (!stream) {
    const reply = JSON.stringify(buildMessage(model, tools));
    res.writeHead(200, { ...head, 'content-length': Buffer.byteLength(reply) });
    res.end(reply);
    return;
  }
  const events = buildEvents(model, Math.max(3, deltas), tools);
  res.writeHead(200, head);
  if (mode.name === 'paced') sendPaced(res, events, tools, mode.gapMs);
  else startHeld(res, events, tools);
}

function main(): void {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  let accepted = 0;
  server.on('connection', () => accepted++);
  server.keepAliveTimeout = 120_000;
  server.maxRequestsPerSocket = 0;
  server.listen(0, '127.0.0.1', () => {
    serveChild((server.address() as AddressInfo).port, {
      mode(next: Mode) {
        mode = next;
        return true;
      },
      release: releaseHeld,
      held: () => held.size,
      /** Connections accepted so far: a proxy that reuses its upstream connections opens few. */
      accepted: () => accepted,
    });
  });
}

main();
