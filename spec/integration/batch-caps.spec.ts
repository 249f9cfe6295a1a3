/**
 * A Message Batch is held and refused as one message is (routes/message-batches.ts): at the largest
 * `priceMultiplier` of the targets that may create it (lib/config/key-groups.ts holdPriceMultiplier; a
 * batch is not routed by model, so that is any target offering batches, whatever models it lists),
 * against the key's, its member's and its team's caps in one step, and refused with the messages
 * route's 402 (lib/billing/cap-refusal.ts): `billing_error`, the cap in its words and in
 * `x-gateway-limit: key|member|team`, `retry-after` when holds of requests in flight are in the way
 * (the batch's own holds, released, are not), when the cap resets. On both stores.
 */
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { createCatalogue } from '../../lib/config/catalogue';
import { batchWorstCase } from '../../lib/billing/worst-case';
import { utcMonth } from '../../lib/store/month';
import type { RedisStore } from '../../lib/store/redis-store';
import { createFakeBatches, type FakeBatches } from '../helpers/fake-batches';
import { defaultHandler, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';
import { chatHeaders, nativeHeaders, rawRequest, type RawReply } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const SECRETS = {
  solo: 'sk-cs4-test-batch-caps-solo-0045',
  alice: 'sk-cs4-test-batch-caps-alice-045',
  bob: 'sk-cs4-test-batch-caps-bob-00045',
  dave: 'sk-cs4-test-batch-caps-dave-0045',
};
const PARAMS = { max_tokens: 64, messages: [{ role: 'user' as const, content: 'Summarise the report.' }] };

const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
const catalogue = createCatalogue(config);
/** The worst case of one request of `batchOf` at the batch rate, at price multiplier 1 (credits). */
function perRequest(modelId: string): number {
  const model = catalogue.resolve(modelId)!;
  return batchWorstCase(model, { model: model.upstreamModel, ...PARAMS }, catalogue.defaultMaxTokens(model), config.reservation).credits;
}
const W = perRequest('haiku');
/** What the fake bills a haiku request (100 input and 50 output tokens at 1 and 5 per million) at the batch rate (0.5x). */
const HAIKU_BILLED = (100 * 1 + 50 * 5) / 1e6 * 0.5;
/** Credits as a 402 writes them. */
const fmt = (credits: number) => String(Math.round(credits * 1e6) / 1e6);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function batchOf(count: number, model = 'haiku', from = 0) {
  return Array.from({ length: count }, (_, i) => ({ custom_id: `r${from + i}`, params: { model, ...PARAMS } }));
}

for (const kind of ['memory', 'redis'] as const) {
  describe(`Message Batches held and refused as a message is (${kind} store)`, function () {
    this.timeout(30_000);
    let gw: TestGateway | undefined;
    let store: RedisStore | undefined;
    let pool: FakeUpstream | undefined;
    let fake: FakeBatches;
    const month = utcMonth(Date.now());

    afterEach(async () => {
      await gw?.close();
      await pool?.close();
      if (store) await deleteRedisPrefix(store.prefix);
      gw = store = pool = undefined;
    });

    /** A gateway with `overrides`; `targets`: its upstream's targets, each on one fake upstream holding the batches. */
    async function start(overrides: Record<string, unknown>, targets?: Array<Record<string, unknown>>): Promise<void> {
      fake = createFakeBatches(defaultHandler);
      store = kind === 'redis' ? await connectTestRedisStore(uniqueRedisPrefix('batch-caps')) : undefined;
      if (targets) {
        pool = await startFakeUpstream(fake.handler);
        const url = pool.url;
        overrides = { ...overrides, upstream: { targets: targets.map((t) => ({ url, apiKeyEnv: 'TEST_UPSTREAM_API_KEY', ...t })), timeoutMs: 5000 } };
      }
      gw = await startTestGateway({ handler: fake.handler, store, overrides });
    }
    const create = (secret: string, requests: unknown[]) =>
      rawRequest(gw!.url, { method: 'POST', path: '/v1/messages/batches', headers: nativeHeaders(secret), body: { requests } });
    /** A 402 in the messages route's shape, naming `limit`; its message. */
    const refusalOf = (reply: RawReply, limit: 'key' | 'member' | 'team'): string => {
      expect(reply.status, reply.text).to.equal(402);
      expect(reply.headers['x-gateway-limit']).to.equal(limit);
      expect(reply.json.type).to.equal('error');
      expect(reply.json.error.type).to.equal('billing_error');
      return reply.json.error.message;
    };
    /** The words of a refusal with no holds in flight, of a batch of worst case `total`, on a cap of `cap` with `spent`. */
    const capWords = (limit: string, cap: number, spent: number, total: number) => new RegExp(
      `^monthly credit cap of this ${limit}: ${escape(fmt(spent))} of ${escape(fmt(cap))} credits spent in ${month} \\(UTC\\), ${escape(fmt(cap - spent))} left; ` +
      `this batch may cost up to ${escape(fmt(total))} at the batch rate \\(its largest request requests\\.0: .+\\)\\. To fit, .+ The cap resets at \\d{4}-\\d\\d-01T00:00:00Z\\.$`);

    it('a batch to a target with priceMultiplier 2 is held at twice its worst case: refused near the key cap, admitted under it, billed at twice the price', async () => {
      const cap = 12.5 * W;
      await start({ keys: [{ id: 'solo', key: SECRETS.solo, rateLimitPerMinute: 100_000, monthlyCreditCap: cap }] }, [{ id: 'dear', priceMultiplier: 2 }]);
      // 8 requests: 8 W at price 1 would fit, 16 W does not.
      const refused = await create(SECRETS.solo, batchOf(8));
      expect(refusalOf(refused, 'key')).to.match(capWords('key', cap, 0, 16 * W));
      expect(refused.headers['retry-after']).to.equal(undefined);
      expect(fake.created.size).to.equal(0);
      const created = await create(SECRETS.solo, batchOf(6));
      expect(created.status, created.text).to.equal(200);
      // Its hold, 12 W, leaves less than one more request's 2 W: refused for the hold in flight.
      const blocked = await create(SECRETS.solo, batchOf(1));
      expect(refusalOf(blocked, 'key')).to.include(`${fmt(12 * W)} held by requests in flight`);
      fake.end(created.json.id);
      const results = await rawRequest(gw!.url, { method: 'GET', path: `/v1/messages/batches/${created.json.id}/results`, headers: nativeHeaders(SECRETS.solo) });
      expect(results.status).to.equal(200);
      expect(await gw!.gateway.store.getMonthSpend('solo', month)).to.be.closeTo(2 * 6 * HAIKU_BILLED, 1e-9);
    });

    it('a batch may be created on any target offering batches: held at the dearest, even one whose models it does not name', async () => {
      const cap = 12.5 * W;
      await start({ keys: [{ id: 'solo', key: SECRETS.solo, rateLimitPerMinute: 100_000, monthlyCreditCap: cap }] },
        [{ id: 'cheap' }, { id: 'dear', priceMultiplier: 2, models: ['model-sonnet-4.6'] }]);
      // A batch of haiku requests is one upstream call, not routed by model: "dear" may create it.
      expect(refusalOf(await create(SECRETS.solo, batchOf(8)), 'key')).to.match(capWords('key', cap, 0, 16 * W));
      expect((await create(SECRETS.solo, batchOf(6))).status).to.equal(200);
    });

    it('a batch that fits the key cap but not the team cap is refused with `x-gateway-limit: team`, as a message is; another member waits for its hold', async () => {
      const teamCap = 12.5 * W;
      await start({
        teams: [{ id: 'core', name: 'Core', monthlyCreditCap: teamCap }],
        keys: [
          { id: 'alice-1', key: SECRETS.alice, team: 'core', owner: 'alice', rateLimitPerMinute: 100_000, monthlyCreditCap: 1 },
          { id: 'bob-1', key: SECRETS.bob, team: 'core', owner: 'bob', rateLimitPerMinute: 100_000, monthlyCreditCap: 1 },
        ],
      });
      expect(refusalOf(await create(SECRETS.alice, batchOf(13)), 'team')).to.match(capWords('team', teamCap, 0, 13 * W));
      // A message the team cap refuses carries the same header and shape.
      const message = await rawRequest(gw!.url, {
        method: 'POST', path: '/v1/chat/completions', headers: chatHeaders(SECRETS.alice),
        body: { model: 'haiku', max_tokens: 64, messages: [{ role: 'user', content: 'x'.repeat(60_000) }] },
      });
      expect(message.status).to.equal(402);
      expect(message.headers['x-gateway-limit']).to.equal('team');
      expect(message.json.error.message).to.match(new RegExp(`^monthly credit cap of this team: 0 of ${escape(fmt(teamCap))} credits spent in ${month} \\(UTC\\)`));

      expect((await create(SECRETS.alice, batchOf(12))).status).to.equal(200);
      // Bob's batch would fit the team cap but for Alice's hold: told to retry, as a message is.
      const waiting = await create(SECRETS.bob, batchOf(1));
      expect(refusalOf(waiting, 'team')).to.match(new RegExp(
        `^monthly credit cap of this team: 0 of ${escape(fmt(teamCap))} credits spent in ${month} \\(UTC\\), ${escape(fmt(12 * W))} held by requests in flight, ` +
        `${escape(fmt(0.5 * W))} free now; this batch may cost up to ${escape(fmt(W))} at the batch rate .+\\. Retry when requests in flight have finished\\.$`));
      expect(waiting.headers['retry-after']).to.equal('5');
      expect(fake.created.size).to.equal(1);
    });

    it('a member-capped self-service key is refused with `x-gateway-limit: member`', async () => {
      const memberCap = 12.5 * W;
      // What /me/keys gives a member: their team, themselves as owner, the member cap as the key's own cap.
      await start({
        teams: [{ id: 'core', name: 'Core', monthlyCreditCap: 100, memberMonthlyCreditCap: memberCap }],
        keys: [{ id: 'dave-1', key: SECRETS.dave, team: 'core', owner: 'dave', rateLimitPerMinute: 100_000, monthlyCreditCap: memberCap }],
      });
      expect(refusalOf(await create(SECRETS.dave, batchOf(13)), 'member')).to.match(capWords('member', memberCap, 0, 13 * W));
      expect((await create(SECRETS.dave, batchOf(12))).status).to.equal(200);
    });

    it('a batch of two models refused at its second hold counts its first as released, not in flight', async () => {
      const cap = 12.5 * W;
      await start({ keys: [{ id: 'solo', key: SECRETS.solo, rateLimitPerMinute: 100_000, monthlyCreditCap: cap }] });
      // 6 haiku requests (6 W, held first) and 3 sonnet ones (3 x its worst case, about 9 W): 15 W in all.
      const mixed = [...batchOf(6), ...batchOf(3, 'model-sonnet-4.6', 6)];
      const total = 6 * W + 3 * perRequest('model-sonnet-4.6');
      expect(total).to.be.greaterThan(cap);
      const refused = await create(SECRETS.solo, mixed);
      expect(refusalOf(refused, 'key')).to.match(new RegExp(`^monthly credit cap of this key: 0 of ${escape(fmt(cap))} credits spent in ${month} \\(UTC\\), ${escape(fmt(cap))} left; this batch may cost up to ${escape(fmt(total))} `));
      expect(refused.headers['retry-after']).to.equal(undefined);
      // Nothing stays held: the whole cap is free for a batch that fits it.
      expect((await create(SECRETS.solo, batchOf(12))).status).to.equal(200);
    });
  });
}
