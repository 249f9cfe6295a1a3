/**
 * Revocation and rotation through the gateway, on both stores: a revoked key fails on its very next
 * request; a rotated key's old secret works through its grace period, then fails; both secrets share
 * one cap.
 */
import { expect } from 'chai';
import { createApiKey, restoreApiKey, revokeApiKey, rotateApiKey } from '../../lib/store/key-admin';
import type { RedisStore } from '../../lib/store/redis-store';
import type { GatewayStore } from '../../lib/store/types';
import { nativeMessage } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix } from '../helpers/redis';

function native(url: string, secret: string) {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

function chat(url: string, secret: string) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
  });
}

for (const kind of ['memory', 'redis'] as const) {
  describe(`revocation and rotation (${kind} store)`, () => {
    let gw: TestGateway;
    let redis: RedisStore | undefined;
    let now = Date.parse('2025-03-10T08:00:00Z');

    beforeEach(async () => {
      now = Date.parse('2025-03-10T08:00:00Z');
      redis = kind === 'redis' ? await connectTestRedisStore(undefined, () => now) : undefined;
      gw = await startTestGateway({
        store: redis as GatewayStore | undefined,
        clock: () => now,
        handler: (request) => ({ kind: 'json', body: nativeMessage('ok', { input_tokens: 1000, output_tokens: 1000 }, request.body.model) }),
      });
    });
    afterEach(async () => {
      await gw.close();
      if (redis) await deleteRedisPrefix(redis.prefix);
    });

    it('a revoked key gets 401 on its very next request, on every route; other keys carry on', async () => {
      const issued = await createApiKey(gw.gateway.store, { id: 'to-revoke', rateLimitPerMinute: 100 });
      expect((await native(gw.url, issued.secret)).status).to.equal(200);
      await revokeApiKey(gw.gateway.store, 'to-revoke');
      const refused = await native(gw.url, issued.secret);
      expect(refused.status).to.equal(401);
      expect(((await refused.json()) as any).error).to.include({ type: 'authentication_error' });
      const chatRefused = await chat(gw.url, issued.secret);
      expect(chatRefused.status).to.equal(401);
      expect(((await chatRefused.json()) as any).error.code).to.equal('invalid_api_key');
      expect((await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': issued.secret } })).status).to.equal(401);
      expect((await native(gw.url, KEYS.all)).status).to.equal(200);
      await restoreApiKey(gw.gateway.store, 'to-revoke');
      expect((await native(gw.url, issued.secret)).status).to.equal(200);
    });

    it('a rotated key: both secrets work during the grace period (24 h by default), then only the new one', async () => {
      const issued = await createApiKey(gw.gateway.store, { id: 'rotating', rateLimitPerMinute: 100 });
      const rotated = await rotateApiKey(gw.gateway.store, 'rotating', undefined, now);
      expect((await native(gw.url, issued.secret)).status).to.equal(200);
      expect((await native(gw.url, rotated.secret)).status).to.equal(200);
      now += 24 * 3_600_000 - 1;
      expect((await native(gw.url, issued.secret)).status).to.equal(200);
      now += 1;
      const expired = await native(gw.url, issued.secret);
      expect(expired.status).to.equal(401);
      await expired.arrayBuffer();
      expect((await native(gw.url, rotated.secret)).status).to.equal(200);
    });

    it('both secrets of a rotated key spend from one cap', async () => {
      // each reply: 1000 input + 1000 output tokens of haiku = 0.006 credits; the cap fits two replies
      // (a third would need its worst case held on top of 0.012 spent)
      const issued = await createApiKey(gw.gateway.store, { id: 'shared', rateLimitPerMinute: 100, monthlyCreditCap: 0.0125 });
      const rotated = await rotateApiKey(gw.gateway.store, 'shared', 3_600_000, now);
      expect((await native(gw.url, issued.secret)).status).to.equal(200);
      expect((await native(gw.url, rotated.secret)).status).to.equal(200);
      for (let i = 0; i < 200 && (await gw.gateway.store.getMonthSpend('shared', '2025-03')) < 0.012; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(await gw.gateway.store.getMonthSpend('shared', '2025-03')).to.be.closeTo(0.012, 1e-12);
      expect((await native(gw.url, issued.secret)).status).to.equal(402);
      expect((await native(gw.url, rotated.secret)).status).to.equal(402);
    });
  });
}
