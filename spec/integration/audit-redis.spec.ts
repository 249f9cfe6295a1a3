/**
 * The audit log on Redis and on a Redis Cluster: appends from two instances at once stay one chain
 * (each entry after the one before, no id twice, verify intact); an entry edited, removed, moved or
 * cut off the end in Redis is found by verification; a change made through one gateway is in the log
 * the other serves. The run's Redis (spec/setup.ts) and a cluster of redis-server processes started here.
 */
import { expect } from 'chai';
import { createClient } from 'redis';
import { recordAudit } from '../../lib/audit/audit-log';
import { verifyAuditLog } from '../../lib/audit/audit-query';
import type { AuditEntry } from '../../lib/audit/audit-types';
import { RedisStore } from '../../lib/store/redis-store';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';
import { keySlot, startRedisCluster } from '../helpers/redis-cluster';
import { useServer } from '../helpers/redis-process';

/** `perStore` appends from each store, all started at once, interleaved. */
async function appendConcurrently(stores: RedisStore[], perStore: number): Promise<AuditEntry[]> {
  return Promise.all(stores.flatMap((store, s) => Array.from({ length: perStore }, (_, i) =>
    recordAudit(store, { actor: 'admin-token', action: 'key.update', object: { type: 'key', id: `k-${s}-${i}` }, after: { rateLimitPerMinute: i + 1 } }))));
}

/** Every entry of `store`'s log, in order, and checks that they form one chain of ids 1..n. */
async function expectOneChain(store: RedisStore, n: number): Promise<void> {
  const entries = await store.readAudit(0, n + 10);
  expect(entries.map((e) => e.id)).to.deep.equal(Array.from({ length: n }, (_, i) => i + 1));
  for (let i = 1; i < n; i++) expect(entries[i].prevHash).to.equal(entries[i - 1].hash);
  expect(await store.readAuditHead()).to.deep.equal({ id: n, hash: entries[n - 1].hash });
  expect(await verifyAuditLog(store)).to.deep.include({ intact: true, entries: n, lastId: n });
}

describe('audit log on Redis', function () {
  this.timeout(30_000);
  const prefix = uniqueRedisPrefix('audit');
  let first: RedisStore;
  let second: RedisStore;

  before(async () => {
    [first, second] = await Promise.all([connectTestRedisStore(prefix), connectTestRedisStore(prefix)]);
  });
  after(async () => {
    await first?.close();
    await second?.close();
    await deleteRedisPrefix(prefix);
  });

  it('appends from two instances at once stay one chain', async () => {
    const appended = await appendConcurrently([first, second], 40);
    expect(new Set(appended.map((e) => e.id)).size).to.equal(80);
    await expectOneChain(first, 80);
  });

  it('verification finds an entry edited, removed, moved, or cut off the end in Redis', async () => {
    const raw = await createClient({ url: testRedisUrl() }).on('error', () => undefined).connect();
    const list = `${prefix}{audit}:entries`;
    try {
      const original = await raw.lRange(list, 0, -1);
      const edited = JSON.parse(original[4]);
      edited.after.rateLimitPerMinute = 99999;
      await raw.lSet(list, 4, JSON.stringify(edited));
      expect(await verifyAuditLog(second)).to.deep.include({ intact: false, firstBrokenId: 5 });
      await raw.lSet(list, 4, 'not json');
      expect(await verifyAuditLog(second)).to.deep.include({ intact: false, firstBrokenId: 5 });
      await raw.lSet(list, 4, original[4]);
      expect(await verifyAuditLog(second)).to.deep.include({ intact: true });

      await raw.lRem(list, 1, original[9]);
      expect(await verifyAuditLog(second)).to.deep.include({ intact: false, firstBrokenId: 10 });
      await raw.lInsert(list, 'BEFORE', original[10], original[9]);
      expect(await verifyAuditLog(second)).to.deep.include({ intact: true });

      await raw.lSet(list, 20, original[21]);
      await raw.lSet(list, 21, original[20]);
      expect(await verifyAuditLog(second)).to.deep.include({ intact: false, firstBrokenId: 21 });
      await raw.lSet(list, 20, original[20]);
      await raw.lSet(list, 21, original[21]);

      await raw.rPop(list);
      expect(await verifyAuditLog(second)).to.deep.include({ intact: false, firstBrokenId: 80 });
      await raw.rPush(list, original[79]);
      expect(await verifyAuditLog(second)).to.deep.include({ intact: true, entries: 80 });
    } finally {
      raw.destroy();
    }
  });
});

describe('audit log across two gateways sharing Redis', function () {
  this.timeout(30_000);
  const prefix = uniqueRedisPrefix('audit-gw');
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    a = await startTestGateway({ env: { ADMIN_TOKEN }, store: await connectTestRedisStore(prefix) });
    b = await startTestGateway({ env: { ADMIN_TOKEN }, store: await connectTestRedisStore(prefix) });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await deleteRedisPrefix(prefix);
  });

  it('a change through one gateway is in the log the other serves, in one chain with config.json\'s entries', async () => {
    const created = await admin(a, 'POST', '/keys', { name: 'shared' });
    await admin(b, 'POST', `/keys/${created.body.key.id}/revoke`);
    const { body } = await admin(b, 'GET', `/audit?objectId=${created.body.key.id}`);
    expect(body.data.map((e: any) => [e.actor, e.action])).to.deep.equal([['admin-token', 'key.create'], ['admin-token', 'key.revoke']]);
    // The second gateway found the declared keys as the first made them: config.json's entries are the first's only.
    expect((await admin(a, 'GET', '/audit?actor=config')).body.data.map((e: any) => e.object.id)).to.deep.equal(['team-all', 'team-haiku', 'team-revoked']);
    expect((await admin(a, 'GET', '/audit/verify')).body).to.deep.include({ intact: true, entries: 5 });
    expect(JSON.stringify(body)).not.to.include(created.body.secret);
  });
});

describe('audit log on a Redis Cluster (3 primaries, 3 replicas, started here)', function () {
  this.timeout(60_000);
  const cluster = useServer(startRedisCluster);

  it('keeps the entries and the head in one slot, and appends from two instances stay one chain', async () => {
    const prefix = uniqueRedisPrefix('audit-cluster');
    const stores = await Promise.all([0, 1].map(() => RedisStore.connect({ clusterNodes: [...cluster().urls], prefix })));
    try {
      expect(stores[0].mode).to.equal('cluster');
      expect(keySlot(`${prefix}{audit}:entries`)).to.equal(keySlot(`${prefix}{audit}:head`));
      await appendConcurrently(stores, 25);
      await expectOneChain(stores[1], 50);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });
});
