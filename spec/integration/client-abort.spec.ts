/**
 * Client aborts: a client that disconnects mid-stream makes the gateway abort its upstream request
 * (the fake upstream sees its socket close within 100 ms), and the usage streamed so far is settled.
 */
import http from 'node:http';
import { expect } from 'chai';
import { nativeMessage, nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, nativeHeaders } from '../helpers/http-client';

/** message_start, a 400-character delta, then a long pause before the rest. */
const slowStream: FakeHandler = (request) => {
  const events = nativeTextEvents(['z'.repeat(400), 'never sent'], { input_tokens: 12, output_tokens: 300 }, request.body.model);
  return { kind: 'stream', events: [...events.slice(0, 4), { pauseMs: 10_000 }, ...events.slice(4)] };
};

/** Open a streaming request, wait for the first delta to arrive, then destroy the connection; resolves with the abort time. */
function openAndAbort(url: string, path: string, headers: Array<[string, string]>, body: object): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const req = http.request({ hostname: target.hostname, port: target.port, path, method: 'POST', headers: Object.fromEntries(headers) });
    req.once('response', (res) => {
      let seen = '';
      res.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes('zzzz')) {
          const at = Date.now();
          req.destroy();
          resolve(at);
        }
      });
    });
    req.once('error', (err) => {
      if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(err);
    });
    req.end(JSON.stringify(body));
  });
}

async function waitForLogLine(gw: TestGateway, route: string): Promise<Record<string, any>> {
  for (let i = 0; i < 200; i++) {
    const line = gw.logLines.find((l) => l.message === 'request' && l.route === route);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no request log line for ${route}`);
}

describe('client aborts mid-stream', () => {
  let gw: TestGateway;
  beforeEach(async () => {
    gw = await startTestGateway({ handler: slowStream });
  });
  afterEach(async () => gw.close());

  it('native route: the upstream request is aborted within 100 ms and the streamed usage settled', async () => {
    const abortedAt = await openAndAbort(gw.url, '/v1/messages', nativeHeaders(), {
      model: 'sonnet', max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'hi' }],
    });
    const closedAt = await gw.upstream.socketClosed(0);
    expect(closedAt - abortedAt).to.be.lessThan(100);
    const line = await waitForLogLine(gw, 'POST /v1/messages');
    expect(line.aborted).to.equal(true);
    expect(line.input_tokens).to.equal(12);
    // 400 characters streamed (~100 tokens), not the upstream's final 300 that never came.
    expect(line.output_tokens).to.equal(100);
  });

  for (const [route, headers] of [['/v1/messages', nativeHeaders()], ['/v1/chat/completions', chatHeaders()]] as const) {
    it(`${route}: a whole reply whose client left before it came is still read and billed`, async () => {
      gw.upstream.setHandler((request) => ({
        kind: 'json', delayMs: 300, body: nativeMessage('late', { input_tokens: 12, output_tokens: 7 }, request.body.model),
      }));
      await new Promise<void>((resolve) => {
        const target = new URL(route, gw.url);
        const req = http.request({ hostname: target.hostname, port: target.port, path: route, method: 'POST', headers: Object.fromEntries(headers) });
        req.once('error', () => resolve());
        req.end(JSON.stringify({ model: 'sonnet', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }));
        // Gone once the upstream has the request, before its reply.
        const waitForUpstream = () => (gw.upstream.requests.length > 0 ? (req.destroy(), resolve()) : setTimeout(waitForUpstream, 5));
        waitForUpstream();
      });
      const line = await waitForLogLine(gw, `POST ${route}`);
      expect(line.input_tokens).to.equal(12);
      expect(line.output_tokens).to.equal(7);
    });
  }

  it('chat route: the upstream request is aborted within 100 ms', async () => {
    const abortedAt = await openAndAbort(gw.url, '/v1/chat/completions', chatHeaders(), {
      model: 'sonnet', stream: true, messages: [{ role: 'user', content: 'hi' }],
    });
    const closedAt = await gw.upstream.socketClosed(0);
    expect(closedAt - abortedAt).to.be.lessThan(100);
    const line = await waitForLogLine(gw, 'POST /v1/chat/completions');
    expect(line.aborted).to.equal(true);
    expect(line.input_tokens).to.equal(12);
    expect(line.output_tokens).to.equal(100);
  });
});
