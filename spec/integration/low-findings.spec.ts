/**
 * The audit's low findings, each as the attacker tried it: an upstream redirect, a tool schema nested
 * 200,000 deep, /health as a way to make the gateway call the upstream.
 */
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, isChatError, isNativeError, nativeHeaders, rawRequest } from '../helpers/http-client';

describe('low findings of the audit', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
  });

  it('an upstream redirect is a 502, its Location never relayed', async () => {
    gw.upstream.setHandler(() => ({ kind: 'json', status: 302, body: {}, headers: { location: 'http://upstream.internal/secret' } }));
    try {
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: { model: 'haiku', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] } });
      expect(reply.status).to.equal(502);
      expect(isNativeError(reply.json)).to.equal(true);
      expect(reply.headers.location).to.equal(undefined);
      expect(reply.text).to.not.include('upstream.internal');
    } finally {
      gw.upstream.setHandler((request) => ({ kind: 'json', body: { input_tokens: 1, request: request.url } }));
    }
  });

  it('an upstream redirect is a 502 on the translating routes too, in their error shape', async () => {
    gw.upstream.setHandler(() => ({ kind: 'json', status: 307, body: {}, headers: { location: 'http://upstream.internal/secret' } }));
    try {
      for (const path of ['/v1/chat/completions', '/v1/responses']) {
        const body = path === '/v1/responses' ? { model: 'haiku', input: 'hi' } : { model: 'haiku', messages: [{ role: 'user', content: 'hi' }] };
        const reply = await rawRequest(gw.url, { path, headers: chatHeaders(), body });
        expect(reply.status, path).to.equal(502);
        expect(isChatError(reply.json), path).to.equal(true);
        expect(reply.headers.location).to.equal(undefined);
        expect(reply.text).to.not.include('upstream.internal');
      }
    } finally {
      gw.upstream.setHandler((request) => ({ kind: 'json', body: { input_tokens: 1, request: request.url } }));
    }
  });

  it('a tool schema nested 200,000 deep is a 400 naming the nesting, not a 502', async () => {
    const deep = '{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000);
    const body = `{"model":"haiku","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`;
    const reply = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body });
    expect(reply.status, reply.text.slice(0, 200)).to.equal(400);
    expect(isChatError(reply.json)).to.equal(true);
    expect(reply.json.error.message).to.match(/nested too deeply/);
    expect(gw.upstream.requests).to.have.length(0);
  });

  it('/health does not send the upstream a request per call', async () => {
    for (let i = 0; i < 20; i++) expect((await rawRequest(gw.url, { method: 'GET', path: '/health' })).status).to.equal(200);
    expect(gw.upstream.requests.filter((request) => request.method === 'HEAD').length).to.be.at.most(1);
  });
});
