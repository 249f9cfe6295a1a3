/**
 * Hard cap under load: 50 requests in flight at once for one key whose cap fits 10 of them whole, and
 * an eleventh with its max_tokens lowered to what the credit left pays.
 */
import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { utcMonth } from '../../lib/store/month';
import type { RedisStore } from '../../lib/store/redis-store';
import type { GatewayStore } from '../../lib/store/types';
import { boundInputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { startGatedUpstream, type GatedUpstream } from '../helpers/gated-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix } from '../helpers/redis';

const SECRET = 'sk-cs4-test-burst-key-000030';
const BODY = JSON.stringify({ model: 'haiku', max_tokens: 2000, messages: [{ role: 'user', content: 'Summarise the report.' }] });

for (const kind of ['memory', 'redis'] as const) {
  describe(`credit cap with 50 requests in flight (${kind} store)`, () => {
    let gw: TestGateway;
    let upstream: GatedUpstream;
    let redis: RedisStore | undefined;

    afterEach(async () => {
      upstream?.release();
      await gw?.close();
      await upstream?.close();
      if (redis) await deleteRedisPrefix(redis.prefix);
    });

    it('lets the 10 that fit through whole and an 11th cut to the credit left; the spend never passes the cap', async () => {
      redis = kind === 'redis' ? await connectTestRedisStore() : undefined;
      const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
      const haiku = createCatalogue(config).resolve('haiku')!;
      const inputBound = boundInputTokens(Buffer.byteLength(BODY), config.reservation);
      const worstCase = priceWorstCase(haiku, inputBound, 2000);
      const cap = 10.5 * worstCase;

      // Each reply uses the whole input bound and all of max_tokens.
      upstream = await startGatedUpstream({ input_tokens: inputBound, output_tokens: 2000 });
      gw = await startTestGateway({
        store: redis as GatewayStore | undefined,
        env: { UPSTREAM_URL: upstream.url },
        overrides: { keys: [{ id: 'burst', key: SECRET, monthlyCreditCap: cap, rateLimitPerMinute: 1000 }] },
      });

      const statuses: number[] = [];
      const replies = Array.from({ length: 50 }, () =>
        fetch(`${gw.url}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': SECRET, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
          body: BODY,
        }).then(async (res) => {
          statuses.push(res.status);
          await res.arrayBuffer();
          return res.status;
        }),
      );
      // All 50 are in flight: 11 held at the upstream, the rest refused.
      await upstream.waitForReceived(11);
      const deadline = Date.now() + 15_000;
      while (statuses.length < 39 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(statuses).to.have.length(39);
      expect(statuses.every((status) => status === 402)).to.equal(true);
      expect(upstream.received()).to.equal(11);
      // The 11th holds the half worst case left: its output bound is cut to what that pays.
      const sent = upstream.maxTokens();
      expect(sent.filter((max) => max === 2000)).to.have.length(10);
      const lowered = sent.find((max) => max !== 2000)!;
      expect(priceWorstCase(haiku, inputBound, lowered)).to.be.at.most(cap - 10 * worstCase + 1e-9);
      expect(priceWorstCase(haiku, inputBound, lowered + 1)).to.be.above(cap - 10 * worstCase);

      upstream.release();
      const all = await Promise.all(replies);
      expect(all.filter((status) => status === 200)).to.have.length(11);
      expect(all.filter((status) => status === 402)).to.have.length(39);

      const month = utcMonth(Date.now());
      let spend = 0;
      for (let i = 0; i < 300 && spend === 0; i++) {
        const usage = await gw.gateway.store.getUsage('burst', month);
        if (usage[0]?.requests === 11) spend = await gw.gateway.store.getMonthSpend('burst', month);
        else await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const realCost = (outputTokens: number) => (inputBound * 1 + outputTokens * 5) / 1e6;
      expect(spend).to.be.closeTo(10 * realCost(2000) + realCost(lowered), 1e-9);
      expect(spend).to.be.at.most(cap);
    });
  });
}
