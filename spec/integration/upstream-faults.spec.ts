/**
 * Upstream faults: refused connections, missing reply heads, idle and broken streams, retries before
 * the first byte (never after), and rotation of several upstream credentials.
 */
import { expect } from 'chai';
import { nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { chatHeaders, isChatError, isNativeError, nativeHeaders, parseSseText, rawRequest } from '../helpers/http-client';
import { freePort } from '../helpers/ports';
import { utcMonth } from '../../lib/store/month';

const nativeBody = (stream = false) => ({ model: 'sonnet', max_tokens: 50, stream, messages: [{ role: 'user', content: 'hi' }] });
const chatBody = (stream = false) => ({ model: 'sonnet', stream, messages: [{ role: 'user', content: 'hi' }] });

function upstreamSection(url: string, extra: Record<string, unknown> = {}) {
  return { url, retryBaseDelayMs: 5, ...extra };
}

describe('upstream faults', () => {
  let gw: TestGateway | undefined;
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });

  describe('connection refused', () => {
    it('answers 502 in each route shape after trying again', async () => {
      const port = await freePort();
      gw = await startTestGateway({ upstream: upstreamSection(`http://127.0.0.1:${port}`) });
      const native = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
      expect(native.status).to.equal(502);
      expect(isNativeError(native.json)).to.equal(true);
      expect(native.json.error.type).to.equal('api_error');
      const chat = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody(true) });
      expect(chat.status).to.equal(502);
      expect(isChatError(chat.json)).to.equal(true);
    });

    it('succeeds when the upstream comes up during the retries', async () => {
      const port = await freePort();
      gw = await startTestGateway({ upstream: upstreamSection(`http://127.0.0.1:${port}`, { retryBaseDelayMs: 300 }) });
      const pending = rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
      await new Promise((r) => setTimeout(r, 50));
      const late = await startFakeUpstreamOn(port);
      try {
        const reply = await pending;
        expect(reply.status).to.equal(200);
        expect(late.requests).to.have.length(1);
      } finally {
        await late.close();
      }
    });
  });

  it('answers 504 when no reply head comes within upstream.timeoutMs', async () => {
    gw = await startTestGatewayWithUpstream(() => ({ kind: 'hang' }), { timeoutMs: 200 });
    const native = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody(true) });
    expect(native.status).to.equal(504);
    expect(isNativeError(native.json)).to.equal(true);
    const chat = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody() });
    expect(chat.status).to.equal(504);
    expect(isChatError(chat.json)).to.equal(true);
    // A timeout is not retried: the request may be running upstream.
    expect(gw.upstream.requests).to.have.length(2);
    // Nor billed 0: the upstream may bill it and told no usage, so each is billed at its hold.
    const held = [await waitForLogLine(gw, (l) => l.message.startsWith('billed at the hold') && l.request_id === native.headers['request-id'])];
    held.push(await waitForLogLine(gw, (l) => l.message.startsWith('billed at the hold') && l !== held[0]));
    expect(held.every((line) => line.credits > 0)).to.equal(true);
    const spent = await gw.gateway.store.getMonthSpend('team-all', utcMonth(Date.now()));
    expect(spent).to.be.closeTo(held[0].credits + held[1].credits, 1e-9);
  });

  describe('idle stream', () => {
    const stalled: FakeHandler = (request) => ({
      kind: 'stream',
      events: [...nativeTextEvents(['Hel'], undefined, request.body.model).slice(0, 4), { pauseMs: 3000 }],
    });

    it('ends a native stream with an error event after streamIdleTimeoutMs', async () => {
      gw = await startTestGatewayWithUpstream(stalled, { streamIdleTimeoutMs: 200 });
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody(true) });
      expect(reply.status).to.equal(200);
      const events = parseSseText(reply.text);
      const last = events[events.length - 1];
      expect(last.event).to.equal('error');
      expect(JSON.parse(last.data)).to.deep.include({ type: 'error' });
      expect(JSON.parse(last.data).error.type).to.equal('timeout_error');
      expect(events.some((e) => e.event === 'message_stop')).to.equal(false);
    });

    it('ends a chat stream with an error record and no [DONE]', async () => {
      gw = await startTestGatewayWithUpstream(stalled, { streamIdleTimeoutMs: 200 });
      const reply = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody(true) });
      expect(reply.status).to.equal(200);
      const records = parseSseText(reply.text);
      expect(records.map((r) => r.data)).to.not.include('[DONE]');
      expect(JSON.parse(records[records.length - 1].data).error.message).to.match(/sent nothing for 200 ms/);
    });
  });

  describe('retries before the first byte', () => {
    function failing(statuses: number[], headers: Record<string, string> = {}): FakeHandler {
      let call = 0;
      return (request) => {
        const status = statuses[call++];
        if (status === undefined) {
          return request.body.stream
            ? { kind: 'stream', events: nativeTextEvents(['ok'], undefined, request.body.model) }
            : { kind: 'json', body: { id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } };
        }
        return { kind: 'json', status, headers, body: { type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'api_error', message: 'try later' } } };
      };
    }

    // The statuses with which the upstream refuses a request unrun (https://docs.anthropic.com/en/api/errors:
    // 429 "Your account has hit a rate limit", 529 "the API is temporarily overloaded"; 503 RFC 9110 §15.6.4).
    for (const status of [429, 503, 529]) {
      it(`retries a ${status} and returns the later success (native and chat)`, async () => {
        gw = await startTestGatewayWithUpstream(failing([status, status, status, status]));
        const native = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
        // maxRetries 2: three attempts, all failing -> the last failure reaches the client.
        expect(native.status).to.equal(status);
        expect(gw.upstream.requests).to.have.length(3);
        const chat = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody(true) });
        expect(chat.status).to.equal(200);
        expect(gw.upstream.requests).to.have.length(5);
      });
    }

    // A 500 (`api_error`, "an unexpected error has occurred internal to Anthropic's systems") and a 502
    // may come after the work began: sent again, the request could run twice. The client's SDK decides.
    for (const status of [500, 502]) {
      it(`does not retry a ${status}: the upstream may have run the request (native and chat)`, async () => {
        gw = await startTestGatewayWithUpstream(failing([status, status]));
        const native = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
        expect(native.status).to.equal(status);
        expect(gw.upstream.requests).to.have.length(1);
        const chat = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody(true) });
        expect(chat.status).to.equal(status);
        expect(gw.upstream.requests).to.have.length(2);
      });
    }

    it('does not retry a 400', async () => {
      gw = await startTestGatewayWithUpstream(failing([400]));
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
      expect(reply.status).to.equal(400);
      expect(gw.upstream.requests).to.have.length(1);
    });

    it('honours maxRetries: 0', async () => {
      gw = await startTestGatewayWithUpstream(failing([503]), { maxRetries: 0 });
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody(true) });
      expect(reply.status).to.equal(503);
      expect(gw.upstream.requests).to.have.length(1);
    });

    it('passes a retry-after longer than maxRetryAfterMs to the client instead of waiting', async () => {
      gw = await startTestGatewayWithUpstream(failing([429], { 'retry-after': '120' }));
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
      expect(reply.status).to.equal(429);
      expect(reply.headers['retry-after']).to.equal('120');
      expect(gw.upstream.requests).to.have.length(1);
    });

    it('never retries once the stream has started: a reset mid-stream ends it with an error event', async () => {
      gw = await startTestGatewayWithUpstream((request) => ({
        kind: 'stream', destroyAtEnd: true,
        events: [...nativeTextEvents(['x'.repeat(400), 'y'.repeat(400)], undefined, request.body.model).slice(0, 5), { pauseMs: 50 }],
      }));
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody(true) });
      expect(reply.status).to.equal(200);
      const events = parseSseText(reply.text);
      expect(events[events.length - 1].event).to.equal('error');
      expect(JSON.parse(events[events.length - 1].data).error.type).to.equal('api_error');
      expect(gw.upstream.requests).to.have.length(1);
      // Settled to what was streamed: 800 characters of text (~200 tokens), not message_start's provisional 1.
      const line = await waitForLogLine(gw, (l) => l.message === 'request' && l.route === 'POST /v1/messages');
      expect(line.output_tokens).to.equal(200);
      expect(line.input_tokens).to.equal(10);
    });

    it('ends a chat stream reset mid-stream with an error record and no [DONE]', async () => {
      gw = await startTestGatewayWithUpstream((request) => ({
        kind: 'stream', destroyAtEnd: true, events: [...nativeTextEvents(['abc'], undefined, request.body.model).slice(0, 4), { pauseMs: 50 }],
      }));
      const reply = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody(true) });
      const records = parseSseText(reply.text);
      expect(records.map((r) => r.data)).to.not.include('[DONE]');
      expect(JSON.parse(records[records.length - 1].data)).to.have.property('error');
      expect(gw.upstream.requests).to.have.length(1);
    });

    it('settles a chat stream reset mid-stream to what was streamed, deltas read in place included', async () => {
      gw = await startTestGatewayWithUpstream((request) => ({
        kind: 'stream', destroyAtEnd: true,
        events: [...nativeTextEvents(['x'.repeat(400), 'y'.repeat(200), 'z"\\/'.repeat(50)], undefined, request.body.model).slice(0, 6), { pauseMs: 50 }],
      }));
      const reply = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody(true) });
      const content = parseSseText(reply.text).map((r) => JSON.parse(r.data)).map((record) => record.choices?.[0]?.delta?.content ?? '').join('');
      expect(content).to.equal('x'.repeat(400) + 'y'.repeat(200) + 'z"\\/'.repeat(50));
      // 800 characters streamed (~200 tokens), not message_start's provisional count.
      const line = await waitForLogLine(gw, (l) => l.message === 'request' && l.route === 'POST /v1/chat/completions');
      expect(line.output_tokens).to.equal(200);
    });

    it('ends a native stream that closes without message_stop with an error event', async () => {
      gw = await startTestGatewayWithUpstream((request) => ({
        kind: 'stream', events: nativeTextEvents(['abc'], undefined, request.body.model).slice(0, 4),
      }));
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody(true) });
      const events = parseSseText(reply.text);
      expect(events[events.length - 1].event).to.equal('error');
    });
  });

  describe('several upstream credentials', () => {
    const env = { UP_KEY_A: 'upstream-key-aaaa', UP_KEY_B: 'upstream-key-bbbb' };
    before(() => Object.assign(process.env, env));
    after(() => {
      delete process.env.UP_KEY_A;
      delete process.env.UP_KEY_B;
    });

    it('uses them in turn', async () => {
      gw = await startTestGatewayWithUpstream(undefined, { apiKeyEnv: ['UP_KEY_A', 'UP_KEY_B'] });
      for (let i = 0; i < 4; i++) {
        const reply = await rawRequest(gw.url, { path: i % 2 ? '/v1/chat/completions' : '/v1/messages', headers: i % 2 ? chatHeaders() : nativeHeaders(), body: i % 2 ? chatBody() : nativeBody() });
        expect(reply.status).to.equal(200);
      }
      expect(gw.upstream.requests.map((r) => r.headers['x-api-key'])).to.deep.equal([env.UP_KEY_A, env.UP_KEY_B, env.UP_KEY_A, env.UP_KEY_B]);
    });

    it('rests a credential that got a 401 and carries on with the other', async () => {
      gw = await startTestGatewayWithUpstream((request) => request.headers['x-api-key'] === env.UP_KEY_A
        ? { kind: 'json', status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } }
        : { kind: 'json', body: { id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } },
      { apiKeyEnv: ['UP_KEY_A', 'UP_KEY_B'] });
      for (let i = 0; i < 3; i++) {
        const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
        expect(reply.status).to.equal(200);
      }
      expect(gw.upstream.requests.map((r) => r.headers['x-api-key'])).to.deep.equal([env.UP_KEY_A, env.UP_KEY_B, env.UP_KEY_B, env.UP_KEY_B]);
    });

    it('rests a credential that got a 429 (chat route too)', async () => {
      gw = await startTestGatewayWithUpstream((request) => request.headers['x-api-key'] === env.UP_KEY_B
        ? { kind: 'json', status: 429, headers: { 'retry-after': '30' }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } } }
        : { kind: 'json', body: { id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } },
      { apiKeyEnv: ['UP_KEY_A', 'UP_KEY_B'] });
      for (let i = 0; i < 3; i++) {
        const reply = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: chatBody() });
        expect(reply.status).to.equal(200);
      }
      expect(gw.upstream.requests.map((r) => r.headers['x-api-key'])).to.deep.equal([env.UP_KEY_A, env.UP_KEY_B, env.UP_KEY_A, env.UP_KEY_A]);
    });
  });

  it('keeps the upstream secret out of relayed error bodies and headers', async () => {
    gw = await startTestGatewayWithUpstream(() => ({
      kind: 'json', status: 403, headers: { 'x-debug-credential': UPSTREAM_SECRET },
      body: { type: 'error', error: { type: 'permission_error', message: `key ${UPSTREAM_SECRET} may not use this model` } },
    }));
    const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: nativeBody() });
    expect(reply.status).to.equal(403);
    expect(reply.text).to.not.include(UPSTREAM_SECRET);
    expect(JSON.stringify(reply.headers)).to.not.include(UPSTREAM_SECRET);
  });

  function startTestGatewayWithUpstream(handler?: FakeHandler, upstream: Record<string, unknown> = {}): Promise<TestGateway> {
    return startTestGateway({ handler, upstream: { retryBaseDelayMs: 5, ...upstream } });
  }
});

/** Start a fake upstream on a given port (for "the upstream comes up later"). */
async function startFakeUpstreamOn(port: number) {
  const http = await import('node:http');
  const requests: unknown[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(req.url);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', model: 'model-sonnet-4.6', content: [{ type: 'text', text: 'late' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { requests, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

async function waitForLogLine(gw: TestGateway, match: (line: Record<string, any>) => boolean): Promise<Record<string, any>> {
  for (let i = 0; i < 100; i++) {
    const line = gw.logLines.find(match);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('log line not found');
}
