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

/**
 * A whole reply waits for the end of the event loop's turn before it is written (lib/turn.ts). The
 * upstream has answered, and billed, by then. A client that leaves during that wait must still be
 * billed: the usage goes on the request's context before the wait, and the finish step settles it.
 * The test holds the wait open (the module's `endOfTurn`, which the routes call through the module
 * object) until the client has gone and the request's log line is written.
 */
describe('client leaves while its whole reply waits for the end of the turn', () => {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const turn = require('../../lib/turn') as { endOfTurn: () => Promise<void> };
  const endOfTurn = turn.endOfTurn;
  let gw: TestGateway;
  /** Set when the upstream has answered: the next wait is the one before the reply is written. */
  let armed = false;
  /** What the test does in that wait. */
  let leave: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    gw = await startTestGateway();
    gw.upstream.setHandler((request) => {
      armed = true;
      return { kind: 'json', body: nativeMessage('Hello, world', { input_tokens: 21, output_tokens: 8 }, request.body?.model) };
    });
    turn.endOfTurn = () => {
      if (!armed || !leave) return endOfTurn();
      armed = false;
      return leave();
    };
  });
  afterEach(async () => {
    turn.endOfTurn = endOfTurn;
    armed = false;
    leave = undefined;
    await gw.close();
  });

  for (const [route, headers, body] of [
    ['/v1/messages', nativeHeaders(), { model: 'sonnet', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }],
    ['/v1/chat/completions', chatHeaders(), { model: 'sonnet', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }],
  ] as const) {
    it(`${route}: the reply's usage is settled and logged, the client got nothing`, async () => {
      const target = new URL(route, gw.url);
      const req = http.request({ hostname: target.hostname, port: target.port, path: route, method: 'POST', headers: Object.fromEntries(headers) });
      let answered = false;
      req.once('response', () => (answered = true));
      req.once('error', () => undefined);
      let waited = false;
      leave = async () => {
        waited = true;
        req.destroy();
        await waitForLogLine(gw, `POST ${route}`);
      };
      req.end(JSON.stringify(body));
      const line = await waitForLogLine(gw, `POST ${route}`);
      expect(waited, 'the reply waited for the end of the turn').to.equal(true);
      expect(answered).to.equal(false);
      expect(line.aborted).to.equal(true);
      expect(line).to.include({ input_tokens: 21, output_tokens: 8 });
      const month = new Date().toISOString().slice(0, 7);
      const usage = await gw.gateway.store.getUsage('team-all', month);
      expect(usage.map((u) => [u.inputTokens, u.outputTokens, u.requests])).to.deep.equal([[21, 8, 1]]);
    });
  }
});
