/**
 * The embedded default upstream: a local HTTP server that speaks the native messages API
 * (`POST /v1/messages`, streaming too, and `POST /v1/messages/count_tokens`) with simulated replies,
 * so a fresh clone works with no outside service. Replies say plainly that they are simulated.
 *
 * Routes by path, the query aside, as the real API does: Claude Code sends `POST /v1/messages?beta=true`
 * and `POST /v1/messages/count_tokens?beta=true`. Also served: `GET /v1/models` and `GET /v1/models/{id}`
 * (models list / get, in the native shape: https://docs.anthropic.com/en/api/models-list and
 * /models), the gateway's reachability probe (`HEAD /`, any answer counts) and `GET /`. Any other path
 * is a 404 `not_found_error`, a known path with another method a 405 with `Allow`, in the native error
 * envelope (https://docs.anthropic.com/en/api/errors).
 */
import http from 'node:http';
import { sendJson } from '../http/json-reply';
import { randomBase62 } from '../keys/secrets';
import { listenOnLoopback, type LoopbackServer } from '../http/loopback';
import { formatSse } from '../http/sse';
import { CHARACTERS_PER_TOKEN, estimateTokens } from '../../translators/usage';

export interface SimulatedUpstreamOptions {
  /** Delay between streamed text deltas, in ms. Default 15, so a terminal shows the stream arrive. */
  deltaDelayMs?: number;
  /** The upstream model names it lists and knows (`GET /v1/models`), read per request. Default: none. */
  models?: () => readonly string[];
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

/**
 * What the user typed in a user turn's content: its last text block that is not context a client wraps in
 * a tag (Claude Code's `<system-reminder>`, Codex's `<environment_context>`), else all of its text.
 */
function promptOf(content: unknown): string {
  if (!Array.isArray(content)) return textOf(content);
  const typed = content.filter((block) => typeof block?.text === 'string' && !block.text.trimStart().startsWith('<'));
  return typed.length > 0 ? typed[typed.length - 1].text : textOf(content);
}

/** The simulated reply text for a request body. */
function composeReply(body: any): { text: string; inputTokens: number } {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const prompt = messages.map((m) => textOf(m?.content)).join('\n') + textOf(body?.system);
  const lastUser = [...messages].reverse().find((m) => m?.role === 'user');
  const said = promptOf(lastUser?.content).trim().slice(0, 200);
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

/** The methods of each path served (the query is not part of the path). */
const ROUTES: Record<string, string[]> = {
  '/': ['GET', 'HEAD'],
  '/v1/messages': ['POST'],
  '/v1/messages/count_tokens': ['POST'],
  '/v1/models': ['GET', 'HEAD'],
};

function sendError(res: http.ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { type: 'error', error: { type, message } });
}

/** A model object of the models API (native shape). */
function modelObject(id: string): object {
  return { type: 'model', id, display_name: id, created_at: '2026-01-01T00:00:00Z' };
}

function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string, options: Required<SimulatedUpstreamOptions>): void {
  const path = new URL(req.url ?? '/', 'http://simulated').pathname;
  const method = req.method ?? 'GET';
  const modelId = /^\/v1\/models\/([^/]+)$/.exec(path)?.[1];
  const allowed = ROUTES[path] ?? (modelId !== undefined ? ['GET', 'HEAD'] : undefined);
  if (!allowed) return sendError(res, 404, 'not_found_error', `Not found: ${path.slice(0, 200)}`);
  if (!allowed.includes(method)) {
    res.setHeader('allow', allowed.join(', '));
    return sendError(res, 405, 'invalid_request_error', `Method ${method} not allowed on ${path}; use ${allowed.join(' or ')}`);
  }
  if (path === '/') return sendJson(res, 200, { status: 'ok', simulated: true });
  if (path === '/v1/models') {
    const data = options.models().map(modelObject);
    return sendJson(res, 200, { data, has_more: false, first_id: data.length > 0 ? options.models()[0] : null, last_id: data.length > 0 ? options.models()[data.length - 1] : null });
  }
  if (modelId !== undefined) {
    const id = decodeURIComponent(modelId);
    if (!options.models().includes(id)) return sendError(res, 404, 'not_found_error', `model: ${id}`);
    return sendJson(res, 200, modelObject(id));
  }
  let body: any;
  try {
    body = JSON.parse(raw);
  } catch {
    return sendError(res, 400, 'invalid_request_error', 'body is not JSON');
  }
  if (path === '/v1/messages/count_tokens') {
    return sendJson(res, 200, { input_tokens: composeReply(body).inputTokens });
  }
  if (body.stream === true) {
    void streamReply(res, body, options.deltaDelayMs);
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
  const resolved: Required<SimulatedUpstreamOptions> = { deltaDelayMs: options.deltaDelayMs ?? 15, models: options.models ?? (() => []) };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8'), resolved));
  });
  return listenOnLoopback(server);
}
