/**
 * A client that leaves a streamed request before the reply head (issue 40, open part 4): the upstream
 * already has the request whole and may be running it (it bills it), so the gateway does not cancel
 * it: the stream is read to its end without a client and billed at the usage it reports. A head that
 * never comes (head timeout) is billed at the hold. A request not yet sent is still cancelled (the
 * existing client-abort tests). Both stores.
 */
import http from 'node:http';
import { expect } from 'chai';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const KEY = 'sk-cs4-test-gone-before-head-0040';
const USAGE = { input_tokens: 12, output_tokens: 7 };
/** model-haiku-4.5: 1 and 5 credits per million input and output tokens (config.json). */
const BILLED = (12 * 1 + 7 * 5) / 1e6;

/** Send a streamed request on `route` and leave once the upstream has it (before any reply head). */
function sendAndLeave(gw: TestGateway, route: string, headers: Record<string, string>, body: object): Promise<void> {
  const before = gw.upstream.requests.length;
  return new Promise((resolve) => {
    const target = new URL(route, gw.url);
    const req = http.request({ hostname: target.hostname, port: target.port, path: route, method: 'POST', headers: { 'content-type': 'application/json', ...headers } });
    req.once('error', () => resolve());
    req.once('response', () => resolve());
    req.end(JSON.stringify(body));
    const waitForUpstream = () => (gw.upstream.requests.length > before ? (req.destroy(), resolve()) : setTimeout(waitForUpstream, 5));
    waitForUpstream();
  });
}

const ROUTES: Array<[string, Record<string, string>, object]> = [
  ['/v1/messages', { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' }, { model: 'haiku', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
  ['/v1/chat/completions', { authorization: `Bearer ${KEY}` }, { model: 'haiku', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }],
];

for (const kind of ['memory', 'redis'] as const) {
  describe(`a client gone before the reply head of a stream (${kind} store)`, function () {
    this.timeout(30_000);
    let gw: TestGateway;
    let handler: FakeHandler;
    const prefix = uniqueRedisPrefix('gone-before-head');

    before(async () => {
      const store: GatewayStore | undefined = kind === 'redis' ? await connectTestRedisStore(prefix) : undefined;
      gw = await startTestGateway({
        handler: (request) => handler(request), store, upstreamTimeoutMs: 1500,
        overrides: { keys: [{ id: 'gone', key: KEY, monthlyCreditCap: 5, rateLimitPerMinute: 1000 }] },
      });
    });
    after(async () => {
      await gw.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    /** The key's spend this month once it has changed from `from` (settlement follows the upstream's end), or after 3 s. */
    async function spendAfter(from: number): Promise<number> {
      const month = utcMonth(Date.now());
      let spend = from;
      for (let i = 0; i < 150 && spend === from; i++) {
        await new Promise((r) => setTimeout(r, 20));
        spend = await gw.gateway.store.getMonthSpend('gone', month);
      }
      return spend;
    }

    for (const [route, headers, body] of ROUTES) {
      it(`${route}: the upstream's stream is read to its end without the client and billed at its usage`, async () => {
        let upstreamClosed = false;
        handler = (request) => ({ kind: 'stream', delayMs: 300, events: nativeTextEvents(['late reply'], USAGE, request.body.model), onEnd: () => { upstreamClosed = true; } });
        const from = await gw.gateway.store.getMonthSpend('gone', utcMonth(Date.now()));
        await sendAndLeave(gw, route, headers, body);
        const spend = await spendAfter(from);
        expect(upstreamClosed, 'the upstream wrote its whole stream').to.equal(true);
        expect(spend - from).to.be.closeTo(BILLED, 1e-9);
        const [totals] = await gw.gateway.store.getUsage('gone', utcMonth(Date.now()));
        expect(totals.outputTokens).to.be.at.least(7);
      });

      it(`${route}: a head that never comes after the client left is billed at the hold`, async () => {
        handler = () => ({ kind: 'hang' });
        const from = await gw.gateway.store.getMonthSpend('gone', utcMonth(Date.now()));
        await sendAndLeave(gw, route, headers, body);
        const spend = await spendAfter(from);
        let line: Record<string, any> | undefined;
        for (let i = 0; i < 100 && !line; i++) {
          line = gw.logLines.find((l) => l.message?.startsWith('billed at the hold') && l.credits > 0 && !l.seen);
          if (!line) await new Promise((r) => setTimeout(r, 20));
        }
        expect(line, 'a billed-at-the-hold warning').to.not.equal(undefined);
        line!.seen = true;
        expect(spend - from).to.be.closeTo(line!.credits, 1e-9);
        expect(spend - from).to.be.greaterThan(BILLED);
      });
    }
  });
}
