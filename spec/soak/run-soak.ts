/**
 * The soak (`npm run soak`, not part of `npm test`): mixed traffic against a gateway for a while, then
 * three verdicts: memory flat after the first minute, no 5xx except injected ones, and usage recorded
 * by the gateway equal to the usage the fake upstream reported for completed requests.
 *
 *   npm run soak                      # 10 minutes
 *   npm run soak -- --minutes 2       # shorter
 *   REDIS_URL=redis://127.0.0.1:6379 npm run soak   # with the Redis store (own key prefix)
 *
 * Traffic (8 workers, back to back): both routes, streaming and not, clients that hang up mid-stream,
 * bad bodies, a rate-limited key, upstream 503s that outlast the retries (injected 5xx) and streams
 * the upstream resets mid-way. Exit code 0 when every verdict holds.
 */
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { nativeTextEvents, type FakeHandler, type FakeReply } from '../helpers/fake-upstream';
import { KEYS, startTestGateway } from '../helpers/gateway';
import { listenOnLoopback } from '../../lib/http/loopback';
import { formatSse } from '../../lib/http/sse';

const SOAK_LIMITED_KEY = 'sk-cs4-soak-rate-limited-0009';
/** Key of the fault traffic (aborts, resets, injected 503s, bad bodies), so the ledger of KEYS.all holds only requests meant to complete. */
const SOAK_FAULTS_KEY = 'sk-cs4-soak-fault-traffic-0008';
const PLAIN_KINDS = new Set(['native', 'native-stream', 'chat', 'chat-stream']);
const WORKERS = 8;

interface Tally {
  requests: number;
  byStatus: Record<string, number>;
  unexpected5xx: string[];
  /** Client outcomes not yet matched with the gateway's log line, by request id (null: not completed). */
  outcomes: Map<string, { input: number; output: number } | null>;
  /** Gateway log lines not yet matched with the client's outcome, by request id. */
  logged: Map<string, { input: number; output: number }>;
  completed: number;
  upstream: { input: number; output: number };
  /** Upstream-reported usage of the completed requests of KEYS.all (compared with its ledger). */
  plainUpstream: { input: number; output: number };
  /** Requests of KEYS.all that did not complete (none expected). */
  plainIncomplete: number;
  gateway: { input: number; output: number };
}

/**
 * Match client outcomes with gateway log lines as both arrive, keeping only the sums (so the soak's
 * own bookkeeping does not grow with the run and blur the memory verdict).
 */
function reconcile(tally: Tally, requestId: string): void {
  const outcome = tally.outcomes.get(requestId);
  const line = tally.logged.get(requestId);
  if (outcome === undefined || line === undefined) return;
  tally.outcomes.delete(requestId);
  tally.logged.delete(requestId);
  if (outcome === null) return;
  tally.completed += 1;
  tally.upstream.input += outcome.input;
  tally.upstream.output += outcome.output;
  tally.gateway.input += line.input;
  tally.gateway.output += line.output;
}

function parseMinutes(argv: string[]): number {
  const at = argv.indexOf('--minutes');
  const minutes = at === -1 ? 10 : Number(argv[at + 1]);
  if (!Number.isFinite(minutes) || minutes <= 0) throw new Error('--minutes takes a positive number');
  return minutes;
}

/** The upstream: usage chosen per request and remembered by its marker, so completed requests can be summed. */
function createSoakUpstream(reported: Map<string, { input: number; output: number }>): FakeHandler {
  return (request): FakeReply => {
    const content = request.body?.messages?.[0]?.content;
    const text = Array.isArray(content) ? String(content[0]?.text ?? '') : String(content ?? '');
    const [marker, mode] = text.split(' ');
    if (mode === 'inject-503') return { kind: 'json', status: 503, body: { type: 'error', error: { type: 'overloaded_error', message: 'injected' } } };
    const usage = { input_tokens: 10 + Math.floor(Math.random() * 500), output_tokens: 5 + Math.floor(Math.random() * 200) };
    reported.set(marker, { input: usage.input_tokens, output: usage.output_tokens });
    const pieces = Array.from({ length: 6 }, (_, i) => `piece ${i} `);
    if (request.body?.stream) {
      const events = nativeTextEvents(pieces, usage, request.body.model);
      if (mode === 'inject-reset') return { kind: 'stream', destroyAtEnd: true, events: [...events.slice(0, 5), { pauseMs: 20 }] };
      const paced = events.flatMap((event, i) => (i > 2 && i < 9 ? [{ pauseMs: mode === 'abort' ? 40 : 5 }, event] : [event]));
      return { kind: 'stream', events: paced };
    }
    return {
      kind: 'json',
      body: { id: `msg_${marker}`, type: 'message', role: 'assistant', model: request.body?.model, content: [{ type: 'text', text: pieces.join('') }], stop_reason: 'end_turn', stop_sequence: null, usage },
    };
  };
}

type Kind = 'native' | 'native-stream' | 'chat' | 'chat-stream' | 'abort' | 'bad-body' | 'rate-limited' | 'inject-503' | 'inject-reset';
const KINDS: Kind[] = ['native', 'native-stream', 'chat', 'chat-stream', 'native', 'chat-stream', 'abort', 'bad-body', 'rate-limited', 'inject-503', 'inject-reset'];

function oneRequest(base: string, agent: http.Agent, kind: Kind, tally: Tally, reported: Map<string, { input: number; output: number }>): Promise<void> {
  const marker = randomBytes(6).toString('hex');
  const chat = kind.startsWith('chat') || (kind === 'inject-reset' && Math.random() < 0.5);
  const stream = kind.endsWith('stream') || kind === 'abort' || kind === 'inject-reset';
  const mode = kind === 'abort' || kind.startsWith('inject') ? kind : 'plain';
  const key = kind === 'rate-limited' ? SOAK_LIMITED_KEY : PLAIN_KINDS.has(kind) ? KEYS.all : SOAK_FAULTS_KEY;
  const headers: Record<string, string> = chat
    ? { 'content-type': 'application/json', authorization: `Bearer ${key}` }
    : { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' };
  const body = kind === 'bad-body'
    ? '{"model": "sonnet", "messages": [{"role": "user", "content": '
    : JSON.stringify({ model: 'sonnet', max_tokens: 300, stream, messages: [{ role: 'user', content: `${marker} ${mode}` }] });
  return new Promise((resolve) => {
    const req = http.request(new URL(chat ? '/v1/chat/completions' : '/v1/messages', base), { method: 'POST', headers, agent });
    req.once('response', (res) => {
      const status = res.statusCode ?? 0;
      tally.requests += 1;
      tally.byStatus[status] = (tally.byStatus[status] ?? 0) + 1;
      if (status >= 500 && kind !== 'inject-503') tally.unexpected5xx.push(`${kind} -> ${status}`);
      let text = '';
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (kind === 'abort' && text.includes('piece 1')) req.destroy();
      });
      res.once('end', () => {
        const complete = status === 200 && (!stream || text.includes('message_stop') || text.includes('[DONE]'));
        const usage = reported.get(marker);
        const requestId = String(res.headers['request-id']);
        tally.outcomes.set(requestId, complete && usage ? usage : null);
        if (PLAIN_KINDS.has(kind)) {
          if (complete && usage) {
            tally.plainUpstream.input += usage.input;
            tally.plainUpstream.output += usage.output;
          } else {
            tally.plainIncomplete += 1;
          }
        }
        reconcile(tally, requestId);
        reported.delete(marker);
        resolve();
      });
      const aborted = () => {
        tally.outcomes.set(String(res.headers['request-id']), null);
        reconcile(tally, String(res.headers['request-id']));
        reported.delete(marker);
        resolve();
      };
      res.once('error', aborted);
      res.once('aborted', aborted);
    });
    req.once('error', () => resolve());
    req.end(body);
  });
}

/**
 * A lean upstream serving `handler`'s replies without recording anything (the test helper keeps every
 * request, which would grow with the run in this same process and blur the memory verdict).
 */
async function startLeanUpstream(handler: FakeHandler): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      let body: any;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = undefined;
      }
      const reply = handler({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, raw });
      if (reply.kind === 'json') {
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
        res.end(JSON.stringify(reply.body));
        return;
      }
      if (reply.kind !== 'stream') return req.socket.destroy();
      res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream' });
      for (const item of reply.events) {
        if (res.destroyed) return;
        if ('pauseMs' in item) await new Promise((r) => setTimeout(r, item.pauseMs));
        else if ('raw' in item) res.write(item.raw);
        else if ('until' in item) await item.until;
        else res.write(formatSse(item.data, item.event));
      }
      if (reply.destroyAtEnd) req.socket.destroy();
      else res.end();
    });
  });
  return listenOnLoopback(server);
}

/** Least-squares slope of heap samples, in MB per minute. */
function slopeMbPerMinute(samples: Array<{ at: number; heap: number }>): number {
  const n = samples.length;
  const mx = samples.reduce((s, p) => s + p.at, 0) / n;
  const my = samples.reduce((s, p) => s + p.heap, 0) / n;
  const num = samples.reduce((s, p) => s + (p.at - mx) * (p.heap - my), 0);
  const den = samples.reduce((s, p) => s + (p.at - mx) ** 2, 0);
  return den === 0 ? 0 : (num / den) * 60_000 / 1e6;
}

async function main(): Promise<void> {
  const minutes = parseMinutes(process.argv.slice(2));
  const reported = new Map<string, { input: number; output: number }>();
  const env: Record<string, string> = {};
  if (process.env.REDIS_URL) {
    env.REDIS_URL = process.env.REDIS_URL;
    env.REDIS_PREFIX = `soak-${randomBytes(4).toString('hex')}:`;
  }
  const upstream = await startLeanUpstream(createSoakUpstream(reported));
  const gw = await startTestGateway({
    env,
    upstream: { url: upstream.url, retryBaseDelayMs: 20, streamIdleTimeoutMs: 5_000 },
    overrides: {
      keys: [
        { id: 'soak-all', key: KEYS.all, rateLimitPerMinute: 1_000_000 },
        { id: 'soak-limited', key: SOAK_LIMITED_KEY, rateLimitPerMinute: 5 },
        { id: 'soak-faults', key: SOAK_FAULTS_KEY, rateLimitPerMinute: 1_000_000 },
      ],
      // The memory store's request log is bounded by design (docs/spend.md); its smallest bound is
      // reached in the first seconds, so a growing heap after the first minute is a leak, not the log.
      requestLog: { maxMemoryRecords: 1000 },
    },
  });
  const tally: Tally = {
    requests: 0, byStatus: {}, unexpected5xx: [], outcomes: new Map(), logged: new Map(), completed: 0,
    upstream: { input: 0, output: 0 }, gateway: { input: 0, output: 0 }, plainUpstream: { input: 0, output: 0 }, plainIncomplete: 0,
  };
  const drainLog = () => {
    for (const line of gw.logLines.splice(0)) {
      if (line.message !== 'request' || typeof line.request_id !== 'string') continue;
      tally.logged.set(line.request_id, { input: line.input_tokens ?? 0, output: line.output_tokens ?? 0 });
      reconcile(tally, line.request_id);
    }
  };
  const drainer = setInterval(drainLog, 500);
  const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS });
  const started = Date.now();
  const endAt = started + minutes * 60_000;
  const heap: Array<{ at: number; heap: number }> = [];
  const sampler = setInterval(() => {
    (global as { gc?: () => void }).gc?.();
    heap.push({ at: Date.now() - started, heap: process.memoryUsage().heapUsed });
    const last = heap[heap.length - 1];
    process.stderr.write(`soak ${Math.round(last.at / 1000)}s: ${tally.requests} requests, heap ${(last.heap / 1e6).toFixed(1)} MB\n`);
  }, 5_000);

  await Promise.all(Array.from({ length: WORKERS }, async () => {
    while (Date.now() < endAt) await oneRequest(gw.url, agent, KINDS[Math.floor(Math.random() * KINDS.length)], tally, reported);
  }));
  clearInterval(sampler);
  agent.destroy();
  await new Promise((r) => setTimeout(r, 500));
  clearInterval(drainer);
  drainLog();

  // Completed requests whose log line never came (every request logs one line when it closes).
  const missing = [...tally.outcomes.values()].filter((outcome) => outcome !== null).length;
  const { input: upstreamInput, output: upstreamOutput } = tally.upstream;
  const { input: gatewayInput, output: gatewayOutput } = tally.gateway;
  const month = new Date().toISOString().slice(0, 7);
  const ledger = await gw.gateway.store.getUsage('soak-all', month).catch(() => []);
  const ledgerInput = ledger.reduce((s, t) => s + t.inputTokens + t.cacheCreationInputTokens + t.cacheReadInputTokens, 0);
  const ledgerOutput = ledger.reduce((s, t) => s + t.outputTokens, 0);
  await gw.close();
  await upstream.close();
  if (env.REDIS_PREFIX) {
    // Remove this run's keys from the shared server.
    const url = new URL(env.REDIS_URL);
    const keys = spawnSync('redis-cli', ['-h', url.hostname, '-p', url.port || '6379', '--scan', '--pattern', `${env.REDIS_PREFIX}*`]).stdout.toString().split('\n').filter(Boolean);
    for (let i = 0; i < keys.length; i += 500) spawnSync('redis-cli', ['-h', url.hostname, '-p', url.port || '6379', 'DEL', ...keys.slice(i, i + 500)]);
  }

  const afterFirstMinute = heap.filter((s) => s.at >= Math.min(60_000, (minutes * 60_000) / 2));
  const slope = slopeMbPerMinute(afterFirstMinute);
  const heapMb = afterFirstMinute.map((s) => s.heap / 1e6);
  const report = {
    minutes,
    store: gw.gateway.store.kind,
    requests: tally.requests,
    requests_per_second: Math.round((tally.requests / (minutes * 60)) * 10) / 10,
    by_status: tally.byStatus,
    unexpected_5xx: tally.unexpected5xx.length,
    completed_with_usage: tally.completed,
    upstream_reported: { input_tokens: upstreamInput, output_tokens: upstreamOutput },
    gateway_recorded: { input_tokens: gatewayInput, output_tokens: gatewayOutput, missing_log_lines: missing },
    ledger_of_completing_key: { input_tokens: ledgerInput, output_tokens: ledgerOutput, requests: ledger.reduce((n, t) => n + t.requests, 0) },
    upstream_reported_for_that_key: { input_tokens: tally.plainUpstream.input, output_tokens: tally.plainUpstream.output, incomplete: tally.plainIncomplete },
    heap_mb_after_first_minute: { min: Math.min(...heapMb).toFixed(1), max: Math.max(...heapMb).toFixed(1), slope_mb_per_minute: slope.toFixed(3) },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const ledgerMatches = tally.plainIncomplete === 0 && ledgerInput === tally.plainUpstream.input && ledgerOutput === tally.plainUpstream.output;
  const usageMatches = missing === 0 && upstreamInput === gatewayInput && upstreamOutput === gatewayOutput && ledgerMatches;
  // "Flat": the fitted trend after the first minute stays under 1 MB per minute.
  const memoryFlat = Math.abs(slope) < 1;
  const ok = usageMatches && memoryFlat && tally.unexpected5xx.length === 0;
  process.stdout.write(`verdict: usage ${usageMatches ? 'equal' : 'DIFFERS'}, memory ${memoryFlat ? 'flat' : 'GROWING'}, unexpected 5xx ${tally.unexpected5xx.length}\n`);
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  process.stderr.write(`soak failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
