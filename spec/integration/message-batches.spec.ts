/**
 * Message Batches through the gateway, driven with the Anthropic SDK (`client.messages.batches`): each
 * request passes the key's aliases and whitelist, a batch is pinned to the key that created it, its
 * worst case is held against the cap while it runs, and its results are billed once at the batch rate
 * (also when two instances sharing Redis read them at once).
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { createFakeBatches, type FakeBatches } from '../helpers/fake-batches';
import { defaultHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const CAPPED = 'sk-cs4-test-batch-capped-0031';
/** 100 input and 50 output tokens of haiku (1 and 5 per million) at the batch rate (0.5x). */
const HAIKU_REQUEST = (100 * 1 + 50 * 5) / 1e6 * 0.5;
/** The same on sonnet-4.6 (3 and 15). */
const SONNET_REQUEST = (100 * 3 + 50 * 15) / 1e6 * 0.5;

function batchOf(count: number, model: (i: number) => string) {
  return Array.from({ length: count }, (_, i) => ({
    custom_id: `req-${i}`,
    params: { model: model(i), max_tokens: 64, messages: [{ role: 'user' as const, content: `question ${i}` }] },
  }));
}

async function spentOf(store: GatewayStore, keyId: string): Promise<number> {
  return store.getMonthSpend(keyId, utcMonth(Date.now()));
}

async function startWith(fake: FakeBatches, store?: GatewayStore): Promise<TestGateway> {
  return startTestGateway({ handler: fake.handler, store });
}

describe('Message Batches (memory store, Anthropic SDK)', function () {
  this.timeout(20_000);
  let fake: FakeBatches;
  let gw: TestGateway;
  const sdk = (key: string) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });

  beforeEach(async () => {
    fake = createFakeBatches(defaultHandler);
    gw = await startTestGateway({
      handler: fake.handler,
      overrides: {
        keys: [
          { id: 'team-all', key: KEYS.all, rateLimitPerMinute: 100_000 },
          { id: 'team-haiku', key: KEYS.haikuOnly, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100_000 },
          { id: 'capped', key: CAPPED, rateLimitPerMinute: 100_000, monthlyCreditCap: 0.02 },
        ],
      },
    });
  });
  afterEach(async () => gw.close());

  it('a batch of 100 requests: aliases resolved, pinned to its key, billed once at the batch rate when its results are read', async () => {
    const client = sdk(KEYS.all);
    const batch = await client.messages.batches.create({ requests: batchOf(100, (i) => (i % 2 ? 'haiku' : 'model-sonnet-4.6')) });
    expect(batch.processing_status).to.equal('in_progress');
    const sent = fake.created.get(batch.id);
    expect(sent.requests[1].params.model).to.equal('model-haiku-4.5');
    expect(sent.requests[0].params.model).to.equal('model-sonnet-4.6');
    expect(sent.requests[1].params.messages).to.deep.equal([{ role: 'user', content: 'question 1' }]);

    // Another key: not found, not listed.
    const other = sdk(KEYS.haikuOnly);
    const missing = await other.messages.batches.retrieve(batch.id).catch((err) => err);
    expect(missing).to.be.instanceOf(Anthropic.NotFoundError);
    expect((await other.messages.batches.list()).data).to.deep.equal([]);
    expect((await client.messages.batches.list()).data.map((b) => b.id)).to.deep.equal([batch.id]);
    expect(await spentOf(gw.gateway.store, 'team-all')).to.equal(0);

    fake.end(batch.id);
    const ended = await client.messages.batches.retrieve(batch.id);
    expect(ended.results_url).to.equal(`/v1/messages/batches/${batch.id}/results`);
    const expected = 50 * HAIKU_REQUEST + 50 * SONNET_REQUEST;
    expect(await spentOf(gw.gateway.store, 'team-all')).to.be.closeTo(expected, 1e-9);

    const results = [];
    for await (const result of await client.messages.batches.results(batch.id)) results.push(result);
    expect(results).to.have.length(100);
    expect(results[0].result.type).to.equal('succeeded');
    // Read again: billed once.
    for await (const _ of await client.messages.batches.results(batch.id)) void _;
    expect(await spentOf(gw.gateway.store, 'team-all')).to.be.closeTo(expected, 1e-9);
    const [haiku] = (await gw.gateway.store.getUsage('team-all', utcMonth(Date.now()))).filter((u) => u.model === 'model-haiku-4.5');
    expect(haiku).to.include({ inputTokens: 5000, outputTokens: 2500 });

    expect((await other.messages.batches.delete(batch.id).catch((err) => err))).to.be.instanceOf(Anthropic.NotFoundError);
    const deleted = await client.messages.batches.delete(batch.id);
    expect(deleted.type).to.equal('message_batch_deleted');
    expect(await client.messages.batches.retrieve(batch.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
  });

  it('each request passes the key\'s whitelist: a model it may not use refuses the batch, naming the request, before the upstream', async () => {
    const refused = await sdk(KEYS.haikuOnly).messages.batches.create({ requests: batchOf(3, (i) => (i === 2 ? 'sonnet' : 'haiku')) }).catch((err) => err);
    expect(refused).to.be.instanceOf(Anthropic.PermissionDeniedError);
    expect(refused.message).to.include('requests.2');
    const unknown = await sdk(KEYS.all).messages.batches.create({ requests: batchOf(2, (i) => (i ? 'model-nope' : 'haiku')) }).catch((err) => err);
    expect(unknown).to.be.instanceOf(Anthropic.NotFoundError);
    expect(fake.created.size).to.equal(0);
  });

  it('every custom_id the API allows is billed (`__proto__` too); one it refuses, or a repeated one, is a 400 before the upstream', async () => {
    const client = sdk(KEYS.all);
    const requests = batchOf(2, () => 'haiku').map((entry, i) => ({ ...entry, custom_id: i ? '__proto__' : 'constructor' }));
    const before = await spentOf(gw.gateway.store, 'team-all');
    const batch = await client.messages.batches.create({ requests });
    fake.end(batch.id);
    await client.messages.batches.retrieve(batch.id);
    expect(await spentOf(gw.gateway.store, 'team-all') - before).to.be.closeTo(2 * HAIKU_REQUEST, 1e-9);
    const created = fake.created.size;
    for (const ids of [['a b', 'ok'], ['same', 'same'], ['x'.repeat(65), 'ok']]) {
      const refused = await client.messages.batches.create({ requests: batchOf(2, () => 'haiku').map((entry, i) => ({ ...entry, custom_id: ids[i] })) }).catch((err) => err);
      expect(refused).to.be.instanceOf(Anthropic.BadRequestError);
      expect(refused.message).to.include('custom_id');
    }
    expect(fake.created.size).to.equal(created);
  });

  it('the cap holds a batch\'s worst case while it runs: one that does not fit is refused (402), one that fits blocks the rest of the cap', async () => {
    const client = sdk(CAPPED);
    // A haiku request's worst case at the batch rate: about ((80 + 1024) x 2 + 64 x 5) / 2 per million = 0.00126.
    const tooBig = await client.messages.batches.create({ requests: batchOf(20, () => 'haiku') }).catch((err) => err);
    expect(tooBig.status).to.equal(402);
    expect(tooBig.message).to.match(/this batch may cost up to 0\.02\d+ at the batch rate/);
    const batch = await client.messages.batches.create({ requests: batchOf(15, () => 'haiku') });
    // Its hold leaves less than a minimal native request: refused until the batch is billed.
    const blocked = await rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: nativeHeaders(CAPPED), body: { model: 'haiku', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] } });
    expect(blocked.status).to.equal(402);
    expect(blocked.json.error.message).to.include('held by requests in flight');
    fake.end(batch.id);
    await client.messages.batches.retrieve(batch.id);
    expect(await spentOf(gw.gateway.store, 'capped')).to.be.closeTo(15 * HAIKU_REQUEST, 1e-9);
    const after = await rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: nativeHeaders(CAPPED), body: { model: 'haiku', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] } });
    expect(after.status).to.equal(200);
  });

  it('only succeeded requests are billed: errored, canceled and expired ones release their share of the hold', async () => {
    const client = sdk(CAPPED);
    const outcomes = ['succeeded', 'errored', 'canceled', 'expired'] as const;
    const batch = await client.messages.batches.create({ requests: batchOf(15, () => 'haiku') });
    fake.end(batch.id, (_id, i) => outcomes[i % 4]);
    const ended = await client.messages.batches.retrieve(batch.id);
    expect(ended.request_counts).to.deep.equal({ processing: 0, succeeded: 4, errored: 4, canceled: 4, expired: 3 });
    expect(await spentOf(gw.gateway.store, 'capped')).to.be.closeTo(4 * HAIKU_REQUEST, 1e-9);
    const types: string[] = [];
    for await (const result of await client.messages.batches.results(batch.id)) types.push(result.result.type);
    expect(types.slice(0, 4)).to.deep.equal([...outcomes]);
    const [haiku] = (await gw.gateway.store.getUsage('capped', utcMonth(Date.now()))).filter((u) => u.model === 'model-haiku-4.5');
    expect(haiku).to.include({ inputTokens: 400, outputTokens: 200 });
    // The hold is gone: the rest of the cap serves a native request again.
    const after = await rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: nativeHeaders(CAPPED), body: { model: 'haiku', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] } });
    expect(after.status).to.equal(200);
  });

  it('a cancelled batch bills nothing for its canceled requests and frees its hold; another key cannot cancel it', async () => {
    const client = sdk(CAPPED);
    const batch = await client.messages.batches.create({ requests: batchOf(15, () => 'haiku') });
    expect(await sdk(KEYS.all).messages.batches.cancel(batch.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
    const canceling = await client.messages.batches.cancel(batch.id);
    expect(canceling.processing_status).to.equal('canceling');
    expect(canceling.cancel_initiated_at).to.be.a('string');
    // Two requests had finished before the cancellation took effect.
    fake.end(batch.id, (_id, i) => (i < 2 ? 'succeeded' : 'canceled'));
    const ended = await client.messages.batches.retrieve(batch.id);
    expect(ended.request_counts).to.include({ succeeded: 2, canceled: 13 });
    expect(await spentOf(gw.gateway.store, 'capped')).to.be.closeTo(2 * HAIKU_REQUEST, 1e-9);
    const after = await rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: nativeHeaders(CAPPED), body: { model: 'haiku', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] } });
    expect(after.status).to.equal(200);
  });
});

describe('Message Batches across two instances sharing Redis', function () {
  this.timeout(30_000);
  const prefix = uniqueRedisPrefix('batches');
  let fake: FakeBatches;
  let first: TestGateway;
  let second: TestGateway;

  before(async () => {
    fake = createFakeBatches(defaultHandler);
    first = await startWith(fake, await connectTestRedisStore(prefix));
    second = await startWith(fake, await connectTestRedisStore(prefix));
  });
  after(async () => {
    await first?.close();
    await second?.close();
    await deleteRedisPrefix(prefix);
  });

  it('a batch of 100 created on one instance is billed once when both read its results at once; another key cannot see it', async () => {
    const onFirst = new Anthropic({ baseURL: first.url, apiKey: KEYS.all, maxRetries: 0 });
    const onSecond = new Anthropic({ baseURL: second.url, apiKey: KEYS.all, maxRetries: 0 });
    const batch = await onFirst.messages.batches.create({ requests: batchOf(100, () => 'haiku') });
    const stranger = new Anthropic({ baseURL: second.url, apiKey: KEYS.haikuOnly, maxRetries: 0 });
    expect(await stranger.messages.batches.retrieve(batch.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
    fake.end(batch.id);
    const read = async (client: Anthropic) => {
      let n = 0;
      for await (const _ of await client.messages.batches.results(batch.id)) n += 1;
      return n;
    };
    expect(await Promise.all([read(onFirst), read(onSecond), read(onSecond)])).to.deep.equal([100, 100, 100]);
    expect(await spentOf(first.gateway.store, 'team-all')).to.be.closeTo(100 * HAIKU_REQUEST, 1e-9);
    const [usage] = await second.gateway.store.getUsage('team-all', utcMonth(Date.now()));
    expect(usage).to.include({ model: 'model-haiku-4.5', inputTokens: 10_000, outputTokens: 5000 });
  });
});
