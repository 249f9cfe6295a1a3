/**
 * Usage sanity, as the audit tried it: an upstream that reports `input_tokens: 1e15`. The request is
 * billed at its hold (logged), never left unbilled (Redis: the settlement script dropped the hold, then
 * HINCRBY refused the charge) and never a charge that blocks the key for the month (memory). On both
 * stores, for a whole reply and a stream.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { nativeMessage, nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const KEY = 'sk-cs4-test-usage-sanity-key-0041';
const ABSURD = { input_tokens: 1e15, output_tokens: 5 };
const SANE = { input_tokens: 10, output_tokens: 5 };

for (const kind of ['memory', 'redis'] as const) {
  describe(`impossible upstream usage (${kind} store)`, function () {
    this.timeout(30_000);
    let gw: TestGateway;
    let usage = ABSURD;
    const prefix = uniqueRedisPrefix('usage-sanity');
    const handler: FakeHandler = (request) => request.body.stream
      ? { kind: 'stream', events: nativeTextEvents(['hi'], usage, request.body.model) }
      : { kind: 'json', body: nativeMessage('hi', usage, request.body.model) };

    before(async () => {
      const store: GatewayStore | undefined = kind === 'redis' ? await connectTestRedisStore(prefix) : undefined;
      gw = await startTestGateway({ handler, store, overrides: { keys: [{ id: 'sanity', key: KEY, monthlyCreditCap: 1, rateLimitPerMinute: 1000 }] } });
    });
    after(async () => {
      await gw.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('bills input_tokens 1e15 at the hold, logs it, and keeps the key usable', async () => {
      const client = new Anthropic({ apiKey: KEY, baseURL: gw.url, maxRetries: 0 });
      const request = { model: 'haiku', max_tokens: 100, messages: [{ role: 'user' as const, content: 'hi' }] };
      usage = ABSURD;
      const whole = await client.messages.create(request);
      expect(whole.usage.input_tokens).to.equal(1e15);
      const stream = await client.messages.stream(request).finalMessage();
      expect(stream.content).to.have.length(1);
      const store = gw.gateway.store;
      const month = utcMonth(Date.now());
      let lines: Array<Record<string, any>> = [];
      for (let i = 0; i < 50 && lines.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 20));
        lines = gw.logLines.filter((l) => l.message === 'impossible usage reported by the upstream: billed at the hold');
      }
      expect(lines, 'one error line per request').to.have.length(2);
      expect(lines[0]).to.include({ level: 'error', key_id: 'sanity', model: 'model-haiku-4.5' });
      expect(lines[0].reason).to.match(/input tokens past/);
      const held = lines.reduce((sum, l) => sum + l.held_credits, 0);
      expect(held).to.be.greaterThan(0).and.below(1);
      expect(await store.getMonthSpend('sanity', month)).to.be.closeTo(held, 1e-9);
      // The credits metric counts what the ledger billed: the holds, not the reported usage priced.
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      const counted = Number(/^gateway_credits_total\{model="model-haiku-4\.5"\} (\S+)$/m.exec(metrics)?.[1]);
      expect(counted).to.be.closeTo(held, 1e-9);
      const [totals] = await store.getUsage('sanity', month);
      expect(totals).to.deep.include({ requests: 2, inputTokens: 0 });
      // Not blocked: a sane request after them is admitted and billed at its usage.
      usage = SANE;
      expect((await client.messages.create(request)).usage.input_tokens).to.equal(10);
      for (let i = 0; i < 50 && (await store.getUsage('sanity', month))[0].requests < 3; i++) await new Promise((r) => setTimeout(r, 20));
      expect((await store.getUsage('sanity', month))[0]).to.deep.include({ requests: 3, inputTokens: 10, outputTokens: 5 });
    });
  });
}
