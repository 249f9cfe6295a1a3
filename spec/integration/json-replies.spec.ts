/**
 * Every JSON reply of the public API (lib/http/json-reply.ts): `content-type: application/json;
 * charset=utf-8`, the body's byte length as `content-length`, and the headers earlier steps set
 * (request id, rate-limit headers) kept.
 */
import { expect } from 'chai';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';

describe('JSON replies', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  async function expectJsonReply(reply: Response, status: number): Promise<any> {
    expect(reply.status).to.equal(status);
    expect(reply.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    const text = await reply.text();
    expect(Number(reply.headers.get('content-length'))).to.equal(Buffer.byteLength(text));
    return JSON.parse(text);
  }

  it('a chat completion, with the request id and rate-limit headers set before it', async () => {
    const reply = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'héllo ✓' }] }),
    });
    expect(reply.headers.get('request-id')).to.match(/^req_/);
    expect(reply.headers.get('x-ratelimit-limit-requests')).to.equal('100000');
    expect(await expectJsonReply(reply, 200)).to.include({ object: 'chat.completion' });
  });

  it('an error, in each route\'s shape', async () => {
    const native = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: '{"model":',
    });
    const body = await expectJsonReply(native, 400);
    expect(body).to.include({ type: 'error', request_id: native.headers.get('request-id') });
    const chat = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer sk-cs4-not-a-key-0000', 'content-type': 'application/json' }, body: '{}' });
    expect((await expectJsonReply(chat, 401)).error).to.include({ code: 'invalid_api_key' });
  });

  it('the model list and the health checks; HEAD gets the headers without the body', async () => {
    await expectJsonReply(await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01' } }), 200);
    expect(await expectJsonReply(await fetch(`${gw.url}/healthz`), 200)).to.deep.equal({ status: 'ok' });
    expect((await expectJsonReply(await fetch(`${gw.url}/health`), 200)).store).to.include({ reachable: true });
    const head = await fetch(`${gw.url}/healthz`, { method: 'HEAD' });
    expect(head.status).to.equal(200);
    expect(head.headers.get('content-length')).to.equal(String(Buffer.byteLength('{"status":"ok"}')));
    expect(await head.text()).to.equal('');
  });
});
