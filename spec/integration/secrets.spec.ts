/**
 * Secrets: no API key or upstream key in a log line, an error message or a reply, on every error
 * path; the upstream never receives the client's key; the client never receives the upstream's key
 * or the upstream headers that name it.
 */
import http from 'node:http';
import net from 'node:net';
import { expect } from 'chai';
import { nativeTextEvents, type FakeHandler, type FakeReply } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { chatHeaders, nativeHeaders, rawRequest, type RawRequest } from '../helpers/http-client';

const ADMIN_TOKEN = 'admin-token-secret-value-0123456789';
const SECRETS = [KEYS.all, KEYS.haikuOnly, KEYS.revoked, UPSTREAM_SECRET, ADMIN_TOKEN];
/** A wrong key with the right prefix: the gateway must not echo it either. */
const WRONG_KEY = 'sk-cs4-wrong-secret-value-0042';

/** The upstream misbehaves in a way chosen by the request's first user message. */
const misbehaving: FakeHandler = (request): FakeReply => {
  // The chat translator may send the content as text blocks.
  const content = request.body?.messages?.[0]?.content;
  const text = Array.isArray(content) ? String(content[0]?.text ?? '') : String(content ?? '');
  const model = request.body?.model;
  switch (text) {
    case 'upstream-401':
      return { kind: 'json', status: 401, headers: { 'x-upstream-key': UPSTREAM_SECRET, 'anthropic-organization-id': 'org-1' },
        body: { type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${UPSTREAM_SECRET}` } } };
    case 'upstream-500':
      return { kind: 'json', status: 500, body: { type: 'error', error: { type: 'api_error', message: `boom for ${UPSTREAM_SECRET}` } } };
    case 'upstream-reset':
      return { kind: 'stream', destroyAtEnd: true, events: [...nativeTextEvents(['partial'], undefined, model).slice(0, 4), { pauseMs: 30 }] };
    case 'upstream-idle':
      return { kind: 'stream', events: [...nativeTextEvents(['partial'], undefined, model).slice(0, 4), { pauseMs: 1000 }] };
    case 'upstream-hang':
      return { kind: 'hang' };
    case 'upstream-destroy':
      return { kind: 'destroy' };
    default:
      return request.body?.stream
        ? { kind: 'stream', events: nativeTextEvents(['ok'], undefined, model) }
        : { kind: 'json', headers: { 'anthropic-ratelimit-tokens-remaining': '5', 'request-id': 'req_up' }, body: { id: 'msg_1', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } };
  }
};

const native = (content: string, stream = false, key = KEYS.all): RawRequest => ({
  path: '/v1/messages', headers: nativeHeaders(key), body: { model: 'sonnet', max_tokens: 8, stream, messages: [{ role: 'user', content }] },
});
const chat = (content: string, stream = false, key = KEYS.all): RawRequest => ({
  path: '/v1/chat/completions', headers: chatHeaders(key), body: { model: 'sonnet', stream, messages: [{ role: 'user', content }] },
});

/** Every error path we can reach from outside. */
const ERROR_PATHS: Array<[string, RawRequest]> = [
  ['no key', { path: '/v1/messages', headers: [['content-type', 'application/json'], ['anthropic-version', '2023-06-01']], body: {} }],
  ['wrong key (native)', native('hi', false, WRONG_KEY)],
  ['wrong key (chat)', chat('hi', false, WRONG_KEY)],
  ['revoked key', native('hi', false, KEYS.revoked)],
  ['revoked key (chat)', chat('hi', false, KEYS.revoked)],
  ['x-api-key on the chat route', { path: '/v1/chat/completions', headers: [['content-type', 'application/json'], ['x-api-key', KEYS.all]], body: {} }],
  ['malformed bearer', { path: '/v1/chat/completions', headers: [['content-type', 'application/json'], ['authorization', `Token ${KEYS.all}`]], body: {} }],
  ['several x-api-key', { path: '/v1/messages', headers: [...nativeHeaders(), ['x-api-key', WRONG_KEY]], body: {} }],
  ['key in the models route query', { method: 'GET', path: `/v1/models?key=${KEYS.all}`, headers: [['x-api-key', WRONG_KEY]] }],
  ['model not allowed', { ...native('hi', false, KEYS.haikuOnly) }],
  ['unknown model', { path: '/v1/messages', headers: nativeHeaders(), body: { model: 'nope', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] } }],
  ['invalid body', { path: '/v1/messages', headers: nativeHeaders(), body: '{"model": ' }],
  ['wrong content type', { path: '/v1/messages', headers: [...nativeHeaders().filter(([n]) => n !== 'content-type'), ['content-type', 'text/plain']], body: 'x' }],
  ['body too large', { path: '/v1/messages', headers: nativeHeaders(), body: { model: 'sonnet', max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(70_000) }] } }],
  ['validation error', { path: '/v1/chat/completions', headers: chatHeaders(), body: { model: 'sonnet', messages: 'no' } }],
  ['unknown path', { method: 'GET', path: '/v2/messages', headers: nativeHeaders() }],
  ['upstream 401', native('upstream-401')],
  ['upstream 401 (chat)', chat('upstream-401')],
  ['upstream 500', native('upstream-500')],
  ['upstream 500 (chat)', chat('upstream-500', true)],
  ['upstream reset mid-stream', native('upstream-reset', true)],
  ['upstream reset mid-stream (chat)', chat('upstream-reset', true)],
  ['upstream idle', native('upstream-idle', true)],
  ['upstream idle (chat)', chat('upstream-idle', true)],
  ['upstream hang', native('upstream-hang')],
  ['upstream hang (chat)', chat('upstream-hang')],
  ['upstream connection destroyed', native('upstream-destroy')],
  ['upstream connection destroyed (chat)', chat('upstream-destroy')],
  ['admin API without a token', { method: 'GET', path: '/admin/v1/keys', headers: [] }],
  ['admin API with a wrong token', { method: 'GET', path: '/admin/v1/keys', headers: [['authorization', `Bearer ${ADMIN_TOKEN}x`]] }],
  ['admin API with the token in x-api-key', { method: 'GET', path: '/admin/v1/keys', headers: [['x-api-key', ADMIN_TOKEN]] }],
  ['admin API, bad body', { path: '/admin/v1/keys', headers: [['authorization', `Bearer ${ADMIN_TOKEN}`], ['content-type', 'application/json']], body: '{"name": ' }],
  ['admin API, unknown key', { method: 'GET', path: '/admin/v1/keys/nope', headers: [['authorization', `Bearer ${ADMIN_TOKEN}`]] }],
  ['admin token as an API key', native('hi', false, ADMIN_TOKEN)],
  ['success (native, for headers)', native('hi')],
  ['success (chat, for headers)', chat('hi', true)],
];

function expectNoSecret(where: string, text: string): void {
  for (const secret of [...SECRETS, WRONG_KEY]) {
    expect(text.includes(secret), `${where} contains a secret (${secret.slice(0, 10)}…)`).to.equal(false);
    // Also the part after the prefix, in case something strips or reformats the prefix.
    expect(text.includes(secret.slice(7)), `${where} contains a secret body`).to.equal(false);
  }
}

describe('secrets', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({
      handler: misbehaving,
      upstream: { timeoutMs: 300, streamIdleTimeoutMs: 200, retryBaseDelayMs: 1, maxRetries: 1 },
      overrides: { limits: { bodyBytes: 64 * 1024 } },
      env: { ADMIN_TOKEN },
    });
  });
  after(async () => gw.close());

  it('no error path puts a key in a reply, a reply header or a log line', async () => {
    const statuses: Record<string, number> = {};
    for (const [name, request] of ERROR_PATHS) {
      const reply = await rawRequest(gw.url, request);
      statuses[name] = reply.status;
      expectNoSecret(`reply to "${name}"`, reply.text);
      expectNoSecret(`reply headers of "${name}"`, JSON.stringify(reply.headers));
      expect(reply.headers, name).to.not.have.property('anthropic-organization-id');
      // The gateway sends the caller's own rate-limit headers; the upstream's (about the gateway's credential) never pass.
      expect(reply.headers['anthropic-ratelimit-tokens-remaining'], name).to.equal(undefined);
    }
    // Each upstream fault really happened on both routes (not a default reply).
    expect(statuses['upstream 401 (chat)']).to.equal(401);
    expect(statuses['upstream 500 (chat)']).to.equal(500);
    expect(statuses['upstream hang (chat)']).to.equal(504);
    expect(statuses['upstream connection destroyed (chat)']).to.equal(502);
    expect(statuses['upstream 401']).to.equal(401);
    expect(statuses['admin API with a wrong token']).to.equal(401);
    // A client that hangs up mid-stream: an error path with no reply to read, only logs.
    await new Promise<void>((resolve) => {
      const req = http.request(new URL('/v1/messages', gw.url), { method: 'POST', headers: Object.fromEntries(nativeHeaders()) });
      req.on('response', () => setTimeout(() => {
        req.destroy();
        resolve();
      }, 20));
      req.on('error', () => resolve());
      req.end(JSON.stringify({ model: 'sonnet', max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'upstream-idle' }] }));
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(gw.logLines.length).to.be.greaterThan(ERROR_PATHS.length);
    gw.logLines.forEach((line, i) => expectNoSecret(`log line ${i} (${line.message})`, JSON.stringify(line)));
  });

  it('the upstream never receives a client key, only the upstream key', () => {
    const upstreamRequests = gw.upstream.requests.filter((r) => r.method === 'POST');
    expect(upstreamRequests.length).to.be.greaterThan(10);
    for (const request of upstreamRequests) {
      const seen = JSON.stringify(request.headers) + JSON.stringify(request.body);
      for (const key of [KEYS.all, KEYS.haikuOnly, KEYS.revoked]) expect(seen.includes(key)).to.equal(false);
      expect(request.headers['x-api-key']).to.equal(UPSTREAM_SECRET);
      expect(request.headers).to.not.have.property('authorization');
    }
  });

  it('an unreachable upstream yields no secret either', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const down = await startTestGateway({ upstream: { url: `http://127.0.0.1:${port}`, retryBaseDelayMs: 1 } });
    try {
      for (const request of [native('hi'), chat('hi', true)]) {
        const reply = await rawRequest(down.url, request);
        expect(reply.status).to.equal(502);
        expectNoSecret('reply', reply.text + JSON.stringify(reply.headers));
      }
      await new Promise((r) => setTimeout(r, 50));
      down.logLines.forEach((line) => expectNoSecret('log line', JSON.stringify(line)));
    } finally {
      await down.close();
    }
  });
});
