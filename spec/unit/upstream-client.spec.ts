import { expect } from 'chai';
import nock from 'nock';
import { createUpstreamClient } from '../../lib/upstream';
import { readBody } from '../../lib/read-body';

// Requiring nock turns interception on for every test file; keep it on only while this suite runs.
nock.restore();

describe('upstream client', () => {
  afterEach(() => nock.cleanAll());
  after(() => nock.restore());
  before(() => {
    if (!nock.isActive()) nock.activate();
  });

  it('sends the body with the upstream credential and identity encoding', async () => {
    const scope = nock('http://upstream.test', { reqheaders: { 'x-api-key': 'up-key', 'accept-encoding': 'identity', 'anthropic-version': '2023-06-01' } })
      .post('/base/v1/messages', { hello: 'world' })
      .reply(200, { ok: true });
    const client = createUpstreamClient({ url: 'http://upstream.test/base', apiKey: 'up-key', timeoutMs: 1000 });
    const { response } = await client.send({ path: '/v1/messages', headers: { 'anthropic-version': '2023-06-01' }, body: Buffer.from('{"hello":"world"}') });
    expect(response.statusCode).to.equal(200);
    expect(JSON.parse((await readBody(response)).toString())).to.deep.equal({ ok: true });
    scope.done();
  });

  it('rejects with a 502 naming the cause when an attempt cannot be started, without retrying', async () => {
    const client = createUpstreamClient({ url: 'http://upstream.test', timeoutMs: 1000, retryBaseDelayMs: 1 });
    let attempts = 0;
    const error = await client.exchange(() => {
      attempts += 1;
      throw new Error('Cannot remove headers after they are sent to the client');
    }).catch((e) => e);
    expect(error).to.include({ status: 502, chatCode: 'upstream_error' });
    expect(error.message).to.include('Cannot remove headers after they are sent');
    expect(attempts).to.equal(1);
  });

  it('sends only the allowed request headers, never a client credential or framing header', async () => {
    const scope = nock('http://upstream.test', { badheaders: ['authorization', 'cookie', 'expect', 'transfer-encoding', 'x-forwarded-for'] })
      .matchHeader('x-api-key', 'up-key')
      .post('/v1/messages').reply(200, {});
    const client = createUpstreamClient({ url: 'http://upstream.test', apiKey: 'up-key', timeoutMs: 1000 });
    const headers = { authorization: 'Bearer sk-cs4-client', 'x-api-key': 'sk-cs4-client', cookie: 'a=b', expect: '100-continue', 'x-forwarded-for': '1.2.3.4' };
    const { response } = await client.send({ path: '/v1/messages', headers, body: Buffer.from('{}') });
    expect(response.statusCode).to.equal(200);
    scope.done();
  });

  it('rejects with 504 when no reply head comes within timeoutMs', async () => {
    nock('http://upstream.test').post('/v1/messages').delay(500).reply(200, {});
    const client = createUpstreamClient({ url: 'http://upstream.test', timeoutMs: 50 });
    const error = await client.send({ path: '/v1/messages', headers: {}, body: Buffer.from('{}') }).catch((e) => e);
    expect(error).to.include({ status: 504, chatCode: 'upstream_error', nativeType: 'api_error' });
  });

  it('rejects with 502 when the upstream cannot be reached', async () => {
    // A refused connection is tried again (maxRetries 2: three attempts in all) before the 502.
    const scope = nock('http://upstream.test').post('/v1/messages').times(3)
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const client = createUpstreamClient({ url: 'http://upstream.test', timeoutMs: 1000, retryBaseDelayMs: 1 });
    const error = await client.send({ path: '/v1/messages', headers: {}, body: Buffer.from('{}') }).catch((e) => e);
    expect(error).to.include({ status: 502, chatCode: 'upstream_error' });
    expect(error.message).to.include('ECONNREFUSED');
    scope.done();
  });

  it('stops waiting to retry as soon as an AbortSignal aborts', async () => {
    nock('http://upstream.test').post('/v1/messages').times(3)
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const client = createUpstreamClient({ url: 'http://upstream.test', timeoutMs: 1000, retryBaseDelayMs: 2000 });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const error = await client.send({ path: '/v1/messages', headers: {}, body: Buffer.from('{}') }, controller.signal).catch((e) => e);
    expect(error).to.include({ status: 502 });
    expect(Date.now() - started).to.be.lessThan(1000, 'the 2 s backoff was cut short');
  });

  it('drops the attempt under way when the client goes away', async () => {
    nock('http://upstream.test').post('/v1/messages').delay(1500).reply(200, {});
    const client = createUpstreamClient({ url: 'http://upstream.test', timeoutMs: 5000 });
    const clientGone = new AbortController();
    const started = Date.now();
    setTimeout(() => clientGone.abort(), 50);
    const error = await client.send({ path: '/v1/messages', headers: {}, body: Buffer.from('{}') }, clientGone.signal).catch((e) => e);
    expect(error).to.include({ status: 502 });
    expect(Date.now() - started).to.be.lessThan(1000, 'not left to the 1.5 s reply');
  });

  it('sends a route naming its target to that target only: retried there, never failed over to another', async () => {
    const a = nock('http://a.test').get('/v1/messages/batches/msgbatch_1').times(2).reply(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    const b = nock('http://b.test').get('/v1/messages/batches/msgbatch_1').reply(200, { id: 'msgbatch_1' });
    const client = createUpstreamClient({ targets: [{ id: 'a', url: 'http://a.test' }, { id: 'b', url: 'http://b.test' }], timeoutMs: 1000, maxRetries: 1, retryBaseDelayMs: 1 });
    const reply = await client.send({ method: 'GET', path: '/v1/messages/batches/msgbatch_1', headers: {} }, undefined, { target: 'a' });
    expect(reply).to.include({ target: 'a' });
    expect(reply.response.statusCode).to.equal(529);
    a.done();
    expect(b.isDone()).to.equal(false);
    const gone = await client.send({ method: 'GET', path: '/v1/messages/batches/msgbatch_1', headers: {} }, undefined, { target: 'c' }).catch((e) => e);
    expect(gone).to.include({ status: 502, nativeType: 'api_error' });
    expect(gone.message).to.include('upstream target "c"');
  });
});
