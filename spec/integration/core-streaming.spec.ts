/**
 * Streaming passes through as it arrives: the first event reaches the client while the upstream is
 * still sending; usage is read on the side; the request is logged once with tokens and no secret.
 */
import { expect } from 'chai';
import { nativeTextEvents } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { parseConfig } from '../../lib/config';
import { createCapturingLogger } from '../helpers/gateway';
import { startGateway } from '../../lib/server';
import { MemoryStore } from '../../lib/store/memory-store';

const NATIVE = { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const CHAT = { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' };

/** Read a fetch body until `marker` appears; resolves with the text so far. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, marker: string): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes(marker)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

describe('integration: streaming pass-through', () => {
  let t: TestGateway;
  let upstreamFinished = false;
  /** Set by a test: the upstream keeps its reply open after message_stop until this settles. */
  let lingerAfterStop: Promise<void> | undefined;
  before(async () => {
    const events = nativeTextEvents(['first', ' second'], { input_tokens: 7, output_tokens: 3 });
    t = await startTestGateway({
      handler: (request) => {
        if (!request.body.stream) return { kind: 'json', body: {} };
        upstreamFinished = false;
        if (lingerAfterStop) return { kind: 'stream', events: [...events, { until: lingerAfterStop }], onEnd: () => (upstreamFinished = true) };
        // Hold the rest of the stream back until the test has seen the first event.
        return { kind: 'stream', events: [events[0], { pauseMs: 400 }, ...events.slice(1)], onEnd: () => (upstreamFinished = true) };
      },
    });
  });
  after(async () => t.close());

  for (const [route, path, headers, body, marker] of [
    ['native', '/v1/messages', NATIVE, { model: 'sonnet', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }, 'message_start'],
    ['chat', '/v1/chat/completions', CHAT, { model: 'sonnet', stream: true, messages: [{ role: 'user', content: 'hi' }] }, '"role":"assistant"'],
  ] as const) {
    it(`${route}: the first event reaches the client before the upstream has finished`, async () => {
      const started = Date.now();
      const response = await fetch(t.url + path, { method: 'POST', headers, body: JSON.stringify(body) });
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^text\/event-stream/);
      expect(response.headers.get('cache-control')).to.equal('no-cache');
      expect(response.headers.get('x-accel-buffering')).to.equal('no');
      expect(response.headers.get('content-encoding')).to.equal(null);
      const reader = response.body!.getReader();
      const first = await readUntil(reader, marker);
      expect(first).to.include(marker);
      // The upstream pauses 400 ms after its first event: arriving well before that proves nothing buffered.
      expect(Date.now() - started).to.be.below(400);
      expect(upstreamFinished).to.equal(false);
      const rest = await readUntil(reader, route === 'native' ? 'message_stop' : '[DONE]');
      expect(rest).to.include(route === 'native' ? 'event: message_stop' : 'data: [DONE]');
      expect(upstreamFinished).to.equal(true);
    });
  }

  it('native: events pass byte for byte, with their event: lines', async () => {
    const response = await fetch(t.url + '/v1/messages', {
      method: 'POST', headers: NATIVE, body: JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await response.text();
    const expected = nativeTextEvents(['first', ' second'], { input_tokens: 7, output_tokens: 3 })
      .map((e) => `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`).join('');
    expect(text).to.equal(expected);
  });

  it('native: the reply ends with the chunk that carries message_stop, though the upstream keeps its reply open after it, and is billed', async () => {
    let release!: () => void;
    lingerAfterStop = new Promise<void>((resolve) => (release = resolve));
    try {
      const response = await fetch(t.url + '/v1/messages', {
        method: 'POST', headers: NATIVE, body: JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      // text() resolves only once the reply has ended.
      const text = await response.text();
      expect(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).to.equal(true);
      expect(upstreamFinished).to.equal(false);
    } finally {
      lingerAfterStop = undefined;
      release();
    }
    await new Promise((r) => setTimeout(r, 50));
    const line = t.logLines.filter((l) => l.message === 'request' && l.route === 'POST /v1/messages').at(-1);
    expect(line).to.include({ status: 200, input_tokens: 7, output_tokens: 3, stream: true });
    expect(line).not.to.have.property('aborted');
  });

  it('logs one line per request with usage read from the stream, and no secret', async () => {
    await new Promise((r) => setTimeout(r, 50));
    const lines = t.logLines.filter((l) => l.message === 'request' && l.route === 'POST /v1/messages' && l.status === 200);
    expect(lines.length).to.be.at.least(2);
    expect(lines[0]).to.include({ key_id: 'team-all', model: 'model-sonnet-4.6', input_tokens: 7, output_tokens: 3, stream: true });
    expect(lines[0].request_id).to.match(/^req_/);
    expect(lines[0].latency_ms).to.be.a('number');
    const all = JSON.stringify(t.logLines);
    expect(all).not.to.include(KEYS.all);
    expect(all).not.to.include('upstream-secret-never-shown');
  });
});

describe('integration: embedded default (no upstream configured)', () => {
  it('serves simulated replies on both routes, streaming too, with a development key', async () => {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const shipped = require('../../../config.json');
    const config = parseConfig(shipped, { PORT: '0' });
    const { logger, lines } = createCapturingLogger();
    const gateway = await startGateway({ config, logger, host: '127.0.0.1' });
    try {
      const key = gateway.developmentKey!;
      expect(key).to.match(/^sk-cs4-[A-Za-z0-9]{40}$/);
      expect(lines.some((l) => l.level === 'warn' && /SIMULATED/.test(l.message))).to.equal(true);
      expect(JSON.stringify(lines)).not.to.include(key);

      const native = await fetch(`${gateway.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sonnet', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'ping' }] }),
      });
      const nativeText = await native.text();
      expect(nativeText).to.include('event: message_start').and.include('simulated').and.include('event: message_stop');

      const chat = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'haiku', stream: true, messages: [{ role: 'user', content: 'ping' }] }),
      });
      const chatText = await chat.text();
      expect(chatText).to.include('"finish_reason":"stop"').and.match(/data: \[DONE\]\n\n$/);

      const health = (await (await fetch(`${gateway.url}/health`)).json()) as { upstream: unknown };
      expect(health.upstream).to.deep.equal({
        reachable: true, simulated: true, keyGroups: [{ id: 'default', targets: [{ id: 'default', state: 'healthy', until: null }] }],
      });
    } finally {
      await gateway.close();
    }
  });

  it('issues a fresh development key at every start, keeping the usage of the earlier ones', async () => {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const config = parseConfig(require('../../../config.json'), { PORT: '0' });
    const store = new MemoryStore();
    const ask = (url: string, key: string) =>
      fetch(`${url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'haiku', max_tokens: 20, messages: [{ role: 'user', content: 'ping' }] }),
      });
    const first = await startGateway({ config, logger: createCapturingLogger().logger, store, host: '127.0.0.1' });
    const firstKey = first.developmentKey!;
    expect((await ask(first.url, firstKey)).status).to.equal(200);
    await first.close();
    const second = await startGateway({ config, logger: createCapturingLogger().logger, store, host: '127.0.0.1' });
    try {
      const secondKey = second.developmentKey!;
      expect(secondKey).to.match(/^sk-cs4-/).and.not.equal(firstKey);
      expect((await ask(second.url, secondKey)).status).to.equal(200);
      expect((await ask(second.url, firstKey)).status).to.equal(401);
      await new Promise((r) => setTimeout(r, 50));
      const usage = await store.getUsage('development', new Date().toISOString().slice(0, 7));
      expect(usage.reduce((n, u) => n + u.requests, 0)).to.equal(2);
    } finally {
      await second.close();
    }
  });
});
