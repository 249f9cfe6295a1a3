/**
 * A hard cap usable to its last credit: a key driven with max_tokens far above what its cap pays, 50
 * requests in flight at a time (on two instances sharing Redis, or on one with the memory store),
 * spends at least 95 % of its cap and never more; its 80 % and 100 % alerts fire once each. The fake
 * upstream bills every reply its whole max_tokens (stop reason `max_tokens`), the costliest reply the
 * real API can give.
 */
import { expect } from 'chai';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { startWebhookReceiver, waitFor, type WebhookReceiver } from '../helpers/webhook-receiver';

const SECRET = 'alerts-webhook-secret-for-usable-cap';
const KEY = 'sk-cs4-test-usable-cap-key-0031';
/** haiku: a worst case of 30,000 output tokens is 0.15 credits; the cap pays about three and a third. */
const CAP = 0.5;
const MAX_TOKENS = 30_000;

const handler: FakeHandler = (request) => ({
  kind: 'json',
  body: { ...nativeMessage('x', { input_tokens: 12, output_tokens: request.body.max_tokens }, request.body.model), stop_reason: 'max_tokens' },
});

for (const kind of ['memory', 'redis'] as const) {
  describe(`a cap usable to its last credit (${kind} store${kind === 'redis' ? ', two instances' : ''})`, function () {
    this.timeout(60_000);
    let receiver: WebhookReceiver;
    let gateways: TestGateway[] = [];
    const prefix = uniqueRedisPrefix('usable-cap');

    before(async () => {
      receiver = await startWebhookReceiver(SECRET);
      const start = async (store?: GatewayStore) => startTestGateway({
        handler, store, env: { ALERTS_WEBHOOK_SECRET: SECRET },
        overrides: {
          keys: [{ id: 'usable', key: KEY, monthlyCreditCap: CAP, rateLimitPerMinute: 100_000 }],
          alerts: { webhookUrl: receiver.url, retryBaseDelayMs: 30, pollIntervalMs: 50, timeoutMs: 2000 },
        },
      });
      gateways = kind === 'redis'
        ? [await start(await connectTestRedisStore(prefix)), await start(await connectTestRedisStore(prefix))]
        : [await start()];
    });
    after(async () => {
      for (const gw of gateways) await gw.close();
      await receiver.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('spends at least 95 % of the cap and never more with 50 requests in flight; the 80 and 100 % alerts fire once', async () => {
      const month = utcMonth(Date.now());
      const store = gateways[0].gateway.store;
      const seen = { whole: 0, cut: 0, inFlight: 0, exhausted: 0 };
      for (let wave = 0; wave < 20 && seen.exhausted === 0; wave++) {
        const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => rawRequest(gateways[i % gateways.length].url, {
          method: 'POST', path: '/v1/messages', headers: nativeHeaders(KEY),
          body: { model: 'haiku', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: `wave ${wave}, request ${i}` }] },
        })));
        for (const reply of replies) {
          if (reply.status === 200) seen[reply.headers['x-gateway-max-tokens'] === undefined ? 'whole' : 'cut'] += 1;
          else if (reply.status === 402 && reply.headers['retry-after'] !== undefined) seen.inFlight += 1;
          else if (reply.status === 402) seen.exhausted += 1;
          else expect.fail(`unexpected status ${reply.status}: ${reply.text}`);
        }
        expect(await store.getMonthSpend('usable', month)).to.be.at.most(CAP);
      }
      expect(seen.whole).to.be.at.least(3);
      expect(seen.cut).to.be.at.least(1);
      expect(seen.exhausted).to.be.above(0);
      let spent = 0;
      const served = seen.whole + seen.cut;
      for (let i = 0; i < 300; i++) {
        const usage = await store.getUsage('usable', month);
        if (usage.reduce((sum, u) => sum + u.requests, 0) === served) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      spent = await store.getMonthSpend('usable', month);
      expect(spent / CAP).to.be.within(0.95, 1);
      await waitFor(() => receiver.delivered().has(`usable:${month}:100`), 10_000, 'the 100 % alert');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const fired = [...receiver.delivered().entries()].map(([id, calls]) => [id, calls.length]);
      expect(fired).to.deep.include.members([[`usable:${month}:50`, 1], [`usable:${month}:80`, 1], [`usable:${month}:100`, 1]]);
      expect(fired).to.have.length(3);
    });
  });
}
