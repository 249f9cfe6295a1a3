import type http from 'node:http';
import net from 'node:net';
import { expect } from 'chai';
import nock from 'nock';
import { createUpstreamClient, isOutcomeUnknown } from '../../lib/upstream';
import { freePort } from '../helpers/ports';
import { readBody } from '../../lib/http/read-body';
import { IDLE_RESET_WINDOW_MS } from '../../lib/upstream/retry-policy';

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

/**
 * A loopback target speaking raw TCP: `onRequest` gets each request's socket, whether the request has
 * arrived whole (its head and `content-length` bytes of body) and its number on this target, on every
 * chunk read until it returns true (then the next chunk starts a new request).
 */
async function rawTarget(onRequest: (socket: net.Socket, whole: boolean, n: number) => boolean) {
  const state = { requests: 0, connections: 0 };
  const server = net.createServer((socket) => {
    state.connections++;
    let head = '';
    let bodyBytes = -1;
    let wanted = 0;
    let n = 0;
    let done = true;
    socket.on('data', (chunk: Buffer) => {
      // Chunks read before a reset or destroy are not a request.
      if (socket.destroyed) return;
      if (done) {
        n = ++state.requests;
        done = false;
        head = '';
        bodyBytes = -1;
      }
      if (bodyBytes === -1) {
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end !== -1) {
          wanted = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
          bodyBytes = head.length - end - 4;
        }
      } else {
        bodyBytes += chunk.length;
      }
      done = onRequest(socket, bodyBytes >= wanted, n);
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, state, close: () => { server.close(); } };
}

const OK = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}';

describe('upstream client: a request runs once (failover and retries only where the upstream cannot have started it)', () => {
  const closers: Array<() => void> = [];
  before(() => nock.restore());
  afterEach(() => closers.splice(0).forEach((close) => close()));

  async function pool(a: string, extra: { timeoutMs?: number } = {}) {
    const b = await rawTarget((socket, whole) => {
      if (whole) socket.write(OK);
      return whole;
    });
    closers.push(b.close);
    const client = createUpstreamClient({
      targets: [{ id: 'a', url: a, weight: 1000 }, { id: 'b', url: b.url, weight: 1 }], timeoutMs: extra.timeoutMs ?? 2000, retryBaseDelayMs: 1, maxRetries: 2,
    });
    return { client, b: b.state };
  }
  const send = (client: ReturnType<typeof createUpstreamClient>, body = Buffer.from('{}')) =>
    client.send({ path: '/v1/messages', headers: {}, body }).catch((err) => err);
  /** The status of a reply read to its end, its socket back in the agent's pool for the next request. */
  const readWhole = async (reply: { response: http.IncomingMessage }) => {
    await readBody(reply.response);
    await new Promise((resolve) => setImmediate(resolve));
    return reply.response.statusCode;
  };

  it('rejects with 502 when the upstream cannot be reached', async () => {
    // A refused connection (a real one: the request never left) is tried again (maxRetries 2: three
    // attempts in all) before the 502.
    const client = createUpstreamClient({ url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 1000, retryBaseDelayMs: 50 });
    const started = Date.now();
    const error = await client.send({ path: '/v1/messages', headers: {}, body: Buffer.from('{}') }).catch((e) => e);
    expect(error).to.include({ status: 502, chatCode: 'upstream_error' });
    expect(error.message).to.include('ECONNREFUSED');
    // Backoffs of 50 and 100 ms (less up to 25% jitter) between the three attempts.
    expect(Date.now() - started).to.be.at.least(110);
  });

  it('stops waiting to retry as soon as an AbortSignal aborts', async () => {
    const client = createUpstreamClient({ url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 1000, retryBaseDelayMs: 2000 });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const error = await client.send({ path: '/v1/messages', headers: {}, body: Buffer.from('{}') }, controller.signal).catch((e) => e);
    expect(error).to.include({ status: 502 });
    expect(Date.now() - started).to.be.lessThan(1000, 'the 2 s backoff was cut short');
  });

  it('fails over a refused connection and a failed TLS handshake: the request never left', async () => {
    const refused = await pool(`http://127.0.0.1:${await freePort()}`);
    const reply = await send(refused.client);
    expect(reply.target).to.equal('b');
    expect(refused.b.requests).to.equal(1);
    // An https target answering with something that is not TLS: the handshake fails before the request is written.
    const garbage = await rawTarget((socket) => (socket.end('HTTP/1.1 200 OK\r\n\r\n'), true));
    closers.push(garbage.close);
    const tls = await pool(garbage.url.replace('http:', 'https:'));
    const viaTls = await send(tls.client);
    expect(viaTls.target).to.equal('b');
    expect(tls.b.requests).to.equal(1);
  });

  it('ends a request whose head timed out with a 504 marked outcome unknown, never sent to another target', async () => {
    const stall = await rawTarget(() => false);
    closers.push(stall.close);
    const { client, b } = await pool(stall.url, { timeoutMs: 200 });
    const error = await send(client);
    expect(error).to.include({ status: 504 });
    expect(isOutcomeUnknown(error)).to.equal(true);
    expect(stall.state.requests).to.equal(1);
    expect(b.requests).to.equal(0);
  });

  it('ends a request whose socket died after it was sent whole with a 502 marked outcome unknown; a 500 and a 502 go to the client', async () => {
    const dies = await rawTarget((socket, whole) => {
      if (whole) socket.destroy();
      return whole;
    });
    closers.push(dies.close);
    const died = await pool(dies.url);
    const error = await send(died.client);
    expect(error).to.include({ status: 502 });
    expect(isOutcomeUnknown(error)).to.equal(true);
    expect([dies.state.requests, died.b.requests]).to.deep.equal([1, 0]);
    for (const status of [500, 502]) {
      const failing = await rawTarget((socket, whole) => {
        if (whole) socket.write(`HTTP/1.1 ${status} Error\r\ncontent-length: 2\r\n\r\n{}`);
        return whole;
      });
      closers.push(failing.close);
      const { client, b } = await pool(failing.url);
      const reply = await send(client);
      expect(reply.response.statusCode, String(status)).to.equal(status);
      expect([failing.state.requests, b.requests], String(status)).to.deep.equal([1, 0]);
    }
  });

  it('fails over a 529 and a connection reset before the request left whole', async () => {
    const overloaded = await rawTarget((socket, whole) => {
      if (whole) socket.write('HTTP/1.1 529 Overloaded\r\ncontent-length: 2\r\n\r\n{}');
      return whole;
    });
    closers.push(overloaded.close);
    const over = await pool(overloaded.url);
    expect((await send(over.client)).target).to.equal('b');
    // 16 MB the target never reads: the reset comes while the body is still being written.
    const resets = await rawTarget((socket) => (socket.resetAndDestroy(), true));
    closers.push(resets.close);
    const reset = await pool(resets.url);
    const big = Buffer.alloc(16 * 1024 * 1024, 0x20);
    const reply = await send(reset.client, big);
    expect(reply.target).to.equal('b');
  });

  it('tries a reused kept-alive socket reset before the request left whole again at once', async () => {
    const big = Buffer.alloc(16 * 1024 * 1024, 0x20);
    // The first request on each connection is answered; the second is reset as soon as it starts.
    const early = await rawTarget((socket, whole, n) => {
      if (n % 2 === 0) return (socket.resetAndDestroy(), true);
      if (whole) socket.write(OK);
      return whole;
    });
    closers.push(early.close);
    const client = createUpstreamClient({ url: early.url, timeoutMs: 2000, retryBaseDelayMs: 1 });
    expect(await readWhole(await send(client))).to.equal(200);
    const reply = await send(client, big);
    expect(reply.response.statusCode).to.equal(200);
    expect(early.state).to.deep.equal({ requests: 3, connections: 2 });
  });

  it('sends a request that met a kept-alive socket the upstream had closed (no reply head) once more, on a fresh socket to the same target; a fresh socket lost is not tried again', async () => {
    // The upstream answers the first request, then drops every connection without a reply byte
    // (what a request sent onto a socket the upstream's server closed while idle meets).
    const late = await rawTarget((socket, whole, n) => {
      if (!whole) return false;
      if (n === 1) socket.write(OK);
      else socket.destroy();
      return true;
    });
    closers.push(late.close);
    const other = await rawTarget((socket, whole) => (whole && socket.write(OK), whole));
    closers.push(other.close);
    // A second target of a tiny weight: the retry stays on the target whose socket was reset.
    const once = createUpstreamClient({ targets: [{ id: 'a', url: late.url, weight: 1000 }, { id: 'b', url: other.url, weight: 1 }], timeoutMs: 2000, retryBaseDelayMs: 1, random: () => 0 });
    expect(await readWhole(await send(once))).to.equal(200);
    const error = await send(once);
    // Sent again once on a new connection; that one (not a reused socket) lost after the request left ends it.
    expect(late.state).to.deep.equal({ requests: 3, connections: 2 });
    expect(other.state.requests).to.equal(0);
    expect(error).to.include({ status: 502 });
    expect(isOutcomeUnknown(error)).to.equal(true);
  });

  it('never sends again a request whose reused socket was reset long after it left whole (the upstream may have been running it)', async () => {
    // The first request on each connection is answered; the second is read whole, then its connection is
    // reset 1.5 s later (a load balancer's idle limit during a long head wait, not an idle-closed socket).
    const slow = await rawTarget((socket, whole, n) => {
      if (!whole) return false;
      if (n % 2 === 1) socket.write(OK);
      else setTimeout(() => socket.resetAndDestroy(), IDLE_RESET_WINDOW_MS + 500);
      return true;
    });
    closers.push(slow.close);
    const client = createUpstreamClient({ url: slow.url, timeoutMs: 5000, retryBaseDelayMs: 1 });
    expect(await readWhole(await send(client))).to.equal(200);
    const error = await send(client);
    expect(slow.state.requests, 'sent once').to.equal(2);
    expect(error).to.include({ status: 502 });
    expect(isOutcomeUnknown(error)).to.equal(true);
  });

  it('runs a request once when the upstream closes idle kept-alive sockets: a request crossing the close is sent again on a fresh socket, and sockets idle 4 s are closed first', async function () {
    this.timeout(15_000);
    const IDLE_CLOSE_MS = 300;
    // A server that closes a connection idle IDLE_CLOSE_MS or longer; a request that arrives on it
    // after that met the close on the wire (its FIN still in flight): reset, never read.
    const lastActive = new WeakMap<net.Socket, number>();
    const idle = await rawTarget((socket, whole) => {
      const since = lastActive.get(socket);
      if (since !== undefined && Date.now() - since >= IDLE_CLOSE_MS) return (socket.resetAndDestroy(), true);
      if (whole) {
        socket.write(OK);
        lastActive.set(socket, Date.now());
      }
      return whole;
    });
    closers.push(idle.close);
    const client = createUpstreamClient({ url: idle.url, timeoutMs: 2000, retryBaseDelayMs: 1, maxRetries: 2 });
    expect(await readWhole(await send(client))).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, IDLE_CLOSE_MS + 50));
    const reply = await send(client);
    expect(await readWhole(reply)).to.equal(200);
    // The reset attempt never reached the upstream's application: it served two requests, on two connections.
    expect(idle.state.connections).to.equal(2);
    // A socket idle longer than the agent's limit (4 s, below a Node server's default 5 s) is not reused.
    const counted = await rawTarget((socket, whole) => (whole && socket.write(OK), whole));
    closers.push(counted.close);
    const plain = createUpstreamClient({ url: counted.url, timeoutMs: 2000 });
    expect(await readWhole(await send(plain))).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 4200));
    const second = await send(plain);
    expect(await readWhole(second)).to.equal(200);
    expect(counted.state).to.deep.equal({ requests: 2, connections: 2 });
  });
});
