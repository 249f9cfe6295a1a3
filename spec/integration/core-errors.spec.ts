/**
 * Every row of the error table, on the native and the chat route: status, shape, type/code, and the
 * request-id headers.
 */
import { expect } from 'chai';
import { defaultHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';

interface Call {
  path: string;
  headers?: Record<string, string>;
  body?: string;
  method?: string;
}

const NATIVE = { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const CHAT = { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' };
const nativeBody = (over: Record<string, unknown> = {}) => JSON.stringify({ model: 'sonnet', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...over });
const chatBody = (over: Record<string, unknown> = {}) => JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'hi' }], ...over });

async function call(t: TestGateway, c: Call): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(t.url + c.path, { method: c.method ?? 'POST', headers: c.headers, body: c.body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

function expectNative(r: { status: number; body: any; headers: Headers }, status: number, type: string): void {
  expect(r.status, JSON.stringify(r.body)).to.equal(status);
  expect(r.body.type).to.equal('error');
  expect(r.body.error.type).to.equal(type);
  expect(r.body.error.message).to.be.a('string').that.is.not.empty;
  expect(r.headers.get('request-id')).to.match(/^req_[A-Za-z0-9]{24}$/);
  expect(r.headers.get('x-request-id')).to.equal(r.headers.get('request-id'));
  expect(r.body.request_id).to.equal(r.headers.get('request-id'));
}

function expectChat(r: { status: number; body: any; headers: Headers }, status: number, code: string): void {
  expect(r.status, JSON.stringify(r.body)).to.equal(status);
  expect(Object.keys(r.body)).to.deep.equal(['error']);
  expect(r.body.error).to.have.all.keys('message', 'type', 'param', 'code');
  expect(r.body.error.code).to.equal(code);
  expect(r.headers.get('x-request-id')).to.match(/^req_/);
}

describe('integration: error table', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({ overrides: { limits: { bodyBytes: 4096 } } });
  });
  after(async () => t.close());

  const rows: Array<[string, Call, number, string, Call, number, string]> = [
    ['body not JSON', { path: '/v1/messages', headers: NATIVE, body: '{"model":' }, 400, 'invalid_request_error',
      { path: '/v1/chat/completions', headers: CHAT, body: 'not json' }, 400, 'invalid_request_error'],
    ['body fails the schema', { path: '/v1/messages', headers: NATIVE, body: nativeBody({ max_tokens: 'ten' }) }, 400, 'invalid_request_error',
      { path: '/v1/chat/completions', headers: CHAT, body: chatBody({ messages: 'hi' }) }, 400, 'invalid_request_error'],
    ['content-type not JSON', { path: '/v1/messages', headers: { ...NATIVE, 'content-type': 'text/plain' }, body: nativeBody() }, 415, 'invalid_request_error',
      { path: '/v1/chat/completions', headers: { ...CHAT, 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=b' }, 415, 'unsupported_media_type'],
    ['missing key', { path: '/v1/messages', headers: { ...NATIVE, 'x-api-key': '' }, body: nativeBody() }, 401, 'authentication_error',
      { path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: chatBody() }, 401, 'invalid_api_key'],
    ['unknown key', { path: '/v1/messages', headers: { ...NATIVE, 'x-api-key': 'sk-cs4-unknown-key-123' }, body: nativeBody() }, 401, 'authentication_error',
      { path: '/v1/chat/completions', headers: { ...CHAT, authorization: 'Bearer sk-cs4-unknown-key-123' }, body: chatBody() }, 401, 'invalid_api_key'],
    ['revoked key', { path: '/v1/messages', headers: { ...NATIVE, 'x-api-key': KEYS.revoked }, body: nativeBody() }, 401, 'authentication_error',
      { path: '/v1/chat/completions', headers: { ...CHAT, authorization: `Bearer ${KEYS.revoked}` }, body: chatBody() }, 401, 'invalid_api_key'],
    ['model not in the catalogue', { path: '/v1/messages', headers: NATIVE, body: nativeBody({ model: 'gpt-nope' }) }, 404, 'not_found_error',
      { path: '/v1/chat/completions', headers: CHAT, body: chatBody({ model: 'gpt-nope' }) }, 404, 'model_not_found'],
    ['model not allowed for the key', { path: '/v1/messages', headers: { ...NATIVE, 'x-api-key': KEYS.haikuOnly }, body: nativeBody() }, 403, 'permission_error',
      { path: '/v1/chat/completions', headers: { ...CHAT, authorization: `Bearer ${KEYS.haikuOnly}` }, body: chatBody() }, 403, 'model_not_allowed'],
    ['path without /v1', { path: '/messages', headers: NATIVE, body: nativeBody() }, 404, 'not_found_error',
      { path: '/chat/completions', headers: CHAT, body: chatBody() }, 404, 'not_found'],
    ['body over the size limit', { path: '/v1/messages', headers: NATIVE, body: nativeBody({ system: 'x'.repeat(5000) }) }, 413, 'request_too_large',
      { path: '/v1/chat/completions', headers: CHAT, body: chatBody({ user: 'x'.repeat(5000) }) }, 413, 'request_too_large'],
  ];

  for (const [name, nativeCall, nativeStatus, nativeType, chatCall, chatStatus, chatCode] of rows) {
    it(`${name}: native ${nativeStatus} ${nativeType}`, async () => {
      expectNative(await call(t, nativeCall), nativeStatus, nativeType);
    });
    it(`${name}: chat ${chatStatus} ${chatCode}`, async () => {
      expectChat(await call(t, chatCall), chatStatus, chatCode);
    });
  }

  it('the chat route refuses a key sent only in x-api-key, naming the Authorization header', async () => {
    const r = await call(t, { path: '/v1/chat/completions', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: chatBody() });
    expectChat(r, 401, 'invalid_api_key');
    expect(r.body.error.message).to.include('Authorization: Bearer');
  });

  it('the Responses route refuses a key sent only in x-api-key, naming that route (not the chat-completions one)', async () => {
    const r = await call(t, { path: '/v1/responses', headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'sonnet', input: 'hi' }) });
    expectChat(r, 401, 'invalid_api_key');
    expect(r.body.error.message).to.equal('POST /v1/responses takes the key in the Authorization header, not x-api-key: "Authorization: Bearer <API_KEY>"');
  });

  it('a known path with another method: 405 with Allow, in the route\'s shape; nothing goes upstream', async () => {
    const native = await call(t, { path: '/v1/messages', method: 'GET', headers: NATIVE });
    expectNative(native, 405, 'invalid_request_error');
    expect(native.headers.get('allow')).to.equal('POST');
    const chat = await call(t, { path: '/v1/chat/completions', method: 'PUT', headers: CHAT, body: chatBody() });
    expectChat(chat, 405, 'method_not_allowed');
    expect(chat.headers.get('allow')).to.equal('POST');
    const stored = await call(t, { path: '/v1/responses/resp_abc', method: 'POST', headers: CHAT, body: '{}' });
    expect(stored.status).to.equal(405);
    expect(stored.headers.get('allow')).to.equal('GET, DELETE, HEAD');
    expect(t.upstream.requests).to.have.length(0);
  });

  it("Claude Code's connection probe, HEAD or GET /api/hello, is a 200 without a key", async () => {
    expect((await fetch(`${t.url}/api/hello`, { method: 'HEAD' })).status).to.equal(200);
    const r = await call(t, { path: '/api/hello', method: 'GET' });
    expect(r.status).to.equal(200);
    expect(r.body).to.deep.equal({ status: 'ok' });
  });

  it('an unknown path: 404 whose hint lists the API routes, /v1/responses included', async () => {
    const r = await call(t, { path: '/v2/nothing', headers: NATIVE, body: nativeBody() });
    expectNative(r, 404, 'not_found_error');
    expect(r.body.error.message).to.include('POST /v1/responses').and.include('POST /v1/messages').and.include('GET /v1/models');
  });

  for (const [name, headers] of [
    ['missing', { 'x-api-key': KEYS.all, 'content-type': 'application/json' }],
    ['earlier than 2023-06-01', { ...NATIVE, 'anthropic-version': '2023-01-01' }],
    ['malformed', { ...NATIVE, 'anthropic-version': 'v1' }],
  ] as Array<[string, Record<string, string>]>) {
    it(`a ${name} version header: 400 naming the header`, async () => {
      const r = await call(t, { path: '/v1/messages', headers, body: nativeBody() });
      expectNative(r, 400, 'invalid_request_error');
      expect(r.body.error.message).to.include('anthropic-version');
    });
  }

  it('accepts the version as vendor-version and forwards it as anthropic-version', async () => {
    t.upstream.requests.length = 0;
    const headers: Record<string, string> = { ...NATIVE, 'vendor-version': '2023-06-01' };
    delete headers['anthropic-version'];
    const r = await call(t, { path: '/v1/messages', headers, body: nativeBody() });
    expect(r.status).to.equal(200);
    expect(t.upstream.requests[0].headers['anthropic-version']).to.equal('2023-06-01');
    expect(t.upstream.requests[0].headers['vendor-version']).to.equal(undefined);
  });

  it('takes x-api-key over Bearer when both are sent on the native route', async () => {
    const r = await call(t, { path: '/v1/messages', headers: { ...NATIVE, authorization: 'Bearer sk-cs4-unknown-key-123' }, body: nativeBody() });
    expect(r.status).to.equal(200);
  });

  it('an upstream error keeps its status and native body on the native route, and maps to the chat shape', async () => {
    t.upstream.setHandler(() => ({ kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    try {
      const native = await call(t, { path: '/v1/messages', headers: NATIVE, body: nativeBody() });
      expect(native.status).to.equal(529);
      expect(native.body).to.deep.equal({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      expect(native.headers.get('request-id')).to.match(/^req_/);
      expect(native.headers.get('upstream-request-id')).to.equal('req_upstream_1');
      const chat = await call(t, { path: '/v1/chat/completions', headers: CHAT, body: chatBody() });
      expect(chat.status).to.be.oneOf([503, 529]);
      expect(chat.body.error).to.include({ message: 'Overloaded', type: 'server_error' });
    } finally {
      t.upstream.setHandler(defaultHandler);
    }
  });

  it('GET /v1/models without a key is 401 in the native shape', async () => {
    expectNative(await call(t, { path: '/v1/models', method: 'GET' }), 401, 'authentication_error');
  });

  it('/healthz is public and /health reports upstream and store', async () => {
    const live = await call(t, { path: '/healthz', method: 'GET' });
    expect(live.status).to.equal(200);
    expect(live.body).to.deep.equal({ status: 'ok' });
    const health = await call(t, { path: '/health', method: 'GET' });
    expect(health.status).to.equal(200);
    expect(health.body.status).to.equal('ok');
    // The error cases above may have opened the one target's breaker: its state is reported, the upstream still answers.
    expect(health.body.upstream).to.include({ reachable: true, simulated: false });
    expect(health.body.store).to.include({ kind: 'memory', reachable: true });
  });
});

describe('integration: upstream unreachable and host check', () => {
  it('answers 502 when the upstream refuses connections, in both shapes', async () => {
    const t = await startTestGateway();
    await t.upstream.close();
    try {
      expectNative(await call(t, { path: '/v1/messages', headers: NATIVE, body: nativeBody() }), 502, 'api_error');
      expectChat(await call(t, { path: '/v1/chat/completions', headers: CHAT, body: chatBody() }), 502, 'upstream_error');
    } finally {
      await t.gateway.close();
    }
  });

  it('answers 504 when the upstream sends no reply head in time', async () => {
    const slow = await startTestGateway({ handler: () => ({ kind: 'hang' }), upstreamTimeoutMs: 200 });
    try {
      expectNative(await call(slow, { path: '/v1/messages', headers: NATIVE, body: nativeBody() }), 504, 'api_error');
      expectChat(await call(slow, { path: '/v1/chat/completions', headers: CHAT, body: chatBody() }), 504, 'upstream_error');
    } finally {
      await slow.close();
    }
  });

  it('answers 421 when baseUrl is configured and the Host differs', async () => {
    const t = await startTestGateway({ overrides: { baseUrl: 'https://gateway.example.com' } });
    try {
      expectNative(await call(t, { path: '/v1/messages', headers: NATIVE, body: nativeBody() }), 421, 'invalid_request_error');
      expectChat(await call(t, { path: '/v1/chat/completions', headers: CHAT, body: chatBody() }), 421, 'misdirected_request');
      expect((await call(t, { path: '/healthz', method: 'GET' })).status).to.equal(421);
    } finally {
      await t.close();
    }
  });
});
