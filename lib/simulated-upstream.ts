/**
 * The embedded default upstream: a local HTTP server that speaks the native messages API
 * (`POST /v1/messages`, streaming too, and `POST /v1/messages/count_tokens`) with simulated replies,
 * so a fresh clone works with no outside service. Replies say plainly that they are simulated.
 */
import http from 'node:http';
import { sendJson } from './json-reply';
import { randomBase62 } from './keys';
import { listenOnLoopback, type LoopbackServer } from './loopback';
import { formatSse } from './sse';
import { CHARACTERS_PER_TOKEN, estimateTokens } from '../translators/usage';

export interface SimulatedUpstreamOptions {
  /** Delay between streamed text deltas, in ms. Default 15, so a terminal shows the stream arrive. */
  deltaDelayMs?: number;
}

/** The running simulated upstream: its URL, and `close()`. */
export type SimulatedUpstream = LoopbackServer;

/** Rough token count of a text (translators/usage.ts `estimateTokens`), at least 1. */
function countTokens(text: string): number {
  return Math.max(1, estimateTokens(text.length));
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((block) => (block && typeof block.text === 'string' ? block.text : '')).join(' ');
  }
  return '';
}

/** The simulated reply text for a request body. */
function composeReply(body: any): { text: string; inputTokens: number } {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const prompt = messages.map((m) => textOf(m?.content)).join('\n') + textOf(body?.system);
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const said = textOf(lastUser?.content).trim().slice(0, 200);
  let text = `This is a simulated reply from ${String(body?.model)} (no upstream is configured). You said: "${said}"`;
  const maxTokens = Number.isInteger(body?.max_tokens) ? body.max_tokens : 4096;
  if (countTokens(text) > maxTokens) text = text.slice(0, Math.max(1, maxTokens * CHARACTERS_PER_TOKEN));
  return { text, inputTokens: countTokens(prompt) };
}

async function streamReply(res: http.ServerResponse, body: any, delayMs: number): Promise<void> {
  const { text, inputTokens } = composeReply(body);
  const id = `msg_sim_${randomBase62(20)}`;
  const pieces = text.match(/\S+\s*/g) ?? [text];
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event: string, data: object) => res.write(formatSse(data, event));
  const pause = () => new Promise((resolve) => setTimeout(resolve, delayMs));
  send('message_start', {
    type: 'message_start',
    message: {
      id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
    },
  });
  send('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  for (const piece of pieces) {
    if (res.destroyed) return;
    if (delayMs > 0) await pause();
    send('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } });
  }
  send('content_block_stop', { type: 'content_block_stop', index: 0 });
  send('message_delta', {
    type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: countTokens(text) },
  });
  send('message_stop', { type: 'message_stop' });
  res.end();
}

function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string, delayMs: number): void {
  if (req.method !== 'POST') return sendJson(res, 200, { status: 'ok', simulated: true });
  let body: any;
  try {
    body = JSON.parse(raw);
  } catch {
    return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'body is not JSON' } });
  }
  if (req.url === '/v1/messages/count_tokens') {
    return sendJson(res, 200, { input_tokens: composeReply(body).inputTokens });
  }
  if (req.url !== '/v1/messages') {
    return sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${req.url}` } });
  }
  if (body.stream === true) {
    void streamReply(res, body, delayMs);
    return;
  }
  const { text, inputTokens } = composeReply(body);
  sendJson(res, 200, {
    id: `msg_sim_${randomBase62(20)}`, type: 'message', role: 'assistant', model: body.model,
    content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null,
    usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: countTokens(text) },
  });
}

/** Start the simulated upstream on an ephemeral loopback port. */
export async function startSimulatedUpstream(options: SimulatedUpstreamOptions = {}): Promise<SimulatedUpstream> {
  const delayMs = options.deltaDelayMs ?? 15;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8'), delayMs));
  });
  return listenOnLoopback(server);
}
