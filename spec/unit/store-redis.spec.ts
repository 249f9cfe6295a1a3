import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { createApiKey, revokeApiKey, rotateApiKey } from '../../lib/store/key-admin';
import { utcMonth } from '../../lib/store/month';
import type { RedisConnection } from '../../lib/store/redis-connection';
import type { RedisStore } from '../../lib/store/redis-store';
import { APPEND_REQUEST_LOG } from '../../lib/store/redis-scripts';
import { createClient } from 'redis';
import { connectTestRedisStore, deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';
import { describeStoreContract } from '../helpers/store-contract';
import { describeAdmissionDeadline } from '../helpers/admission-deadline';

describe('RedisStore (a real Redis: the suite\'s own, or TEST_REDIS_URL)', () => {
  describeStoreContract(
    async () => {
      let now = 0;
      const store = await connectTestRedisStore(uniqueRedisPrefix('contract'), () => now);
      return { store, setNow: (ms) => (now = ms) };
    },
    async (f) => {
      await f.store.close();
      await deleteRedisPrefix((f.store as RedisStore).prefix);
    },
  );

  describeAdmissionDeadline(() => connectTestRedisStore(uniqueRedisPrefix('deadline')), async (store) => {
    await store.close();
    await deleteRedisPrefix(store.prefix);
  });

  describe('two instances on one server', () => {
    let prefix: string;
    let a: RedisStore;
    let b: RedisStore;
    beforeEach(async () => {
      prefix = uniqueRedisPrefix('pair');
      a = await connectTestRedisStore(prefix);
      b = await connectTestRedisStore(prefix);
    });
    afterEach(async () => {
      await a.close();
      await b.close();
      await deleteRedisPrefix(prefix);
    });

    it('a revocation or rotation through one is seen by the other on its next lookup', async () => {
      const issued = await createApiKey(a, { id: 'k1', rateLimitPerMinute: 5 });
      expect((await b.findKeyBySecretHash(hashSecret(issued.secret)))!.revoked).to.equal(false);
      await revokeApiKey(a, 'k1');
      expect((await b.findKeyBySecretHash(hashSecret(issued.secret)))!.revoked).to.equal(true);
      const rotated = await rotateApiKey(b, 'k1', 0);
      expect(await a.findKeyBySecretHash(hashSecret(issued.secret))).to.equal(null);
      expect((await a.findKeyBySecretHash(hashSecret(rotated.secret)))!.id).to.equal('k1');
    });

    it('holds one cap between them: 25 reservations through each against a cap that fits 10', async () => {
      const month = utcMonth(Date.now());
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).reserveCredits('k1', month, 2, 20, 60_000)));
      expect(results.filter((r) => r.ok)).to.have.length(10);
    });

    it('shares rate-limit counts, and a change through one is caught by the other\'s admission', async () => {
      const issued = await createApiKey(a, { id: 'k1', rateLimitPerMinute: 5 });
      const sha = hashSecret(issued.secret);
      const admit = async (store: RedisStore) => store.admit({
        snapshot: (await store.identifyKey(sha, Date.now()))!, secretSha256: sha, now: Date.now(), rateLimitWindowMs: 60_000, reservation: null,
      });
      await admit(a);
      await admit(b);
      expect(await admit(a)).to.deep.include({ outcome: 'admitted', totalHits: 3 });
      await revokeApiKey(a, 'k1');
      const seenByB = (await b.identifyKey(sha, Date.now()))!;
      expect(seenByB.key.revoked, 'b answers from its copy').to.equal(false);
      const changed = await b.admit({ snapshot: seenByB, secretSha256: sha, now: Date.now(), rateLimitWindowMs: 60_000, reservation: null });
      expect(changed.outcome).to.equal('changed');
      expect((await b.identifyKey(sha, Date.now()))!.key.revoked, 'its copy is now the revoked record').to.equal(true);
    });
  });

  it('records a settlement whose hold was lost (a failover before the replica had it) once, and a repeat of it never', async () => {
    const prefix = uniqueRedisPrefix('lost-hold');
    const store = await connectTestRedisStore(prefix);
    const raw = await createClient({ url: testRedisUrl() }).connect();
    try {
      const r = await store.reserveCredits('k1', '2025-06', 1, 5, 60_000);
      if (!r.ok) throw new Error('not reserved');
      await raw.hDel(`${prefix}{k1}:credits:2025-06`, `hold:${r.reservation.id}`);
      const used = { model: 'm', inputTokens: 7, outputTokens: 3, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.25 };
      await store.settleCredits(r.reservation, used);
      await store.settleCredits(r.reservation, used);
      expect(await store.getMonthSpend('k1', '2025-06')).to.equal(0.25);
      expect((await store.getUsage('k1', '2025-06'))[0]).to.include({ inputTokens: 7, requests: 1 });
    } finally {
      await raw.close();
      await store.close();
      await deleteRedisPrefix(prefix);
    }
  });

  it('an instance killed right after a settlement leaves its request log record with it: one step, the ledger and the log add up', async () => {
    const prefix = uniqueRedisPrefix('killed-after-settle');
    const killed = await connectTestRedisStore(prefix);
    const reader = await connectTestRedisStore(prefix);
    // The instance dies at its next request log append: that call never returns, nothing after it runs.
    const connection = (killed as unknown as { connection: RedisConnection }).connection;
    const run = connection.run.bind(connection);
    let died: () => void = () => undefined;
    const death = new Promise<void>((resolve) => (died = resolve));
    connection.run = (script, keys, args) => {
      if (script !== APPEND_REQUEST_LOG) return run(script, keys, args);
      died();
      return new Promise(() => undefined);
    };
    try {
      const at = Date.now();
      const month = utcMonth(at);
      const r = await killed.reserveCredits('k1', month, 1, 5, 60_000);
      if (!r.ok) throw new Error('not reserved');
      const log = { time: 0, requestId: 'req_killed', keyId: 'k1', keyGroup: 'default', route: 'POST /v1/messages', model: 'm', status: 200,
        stopReason: 'end_turn', inputTokens: 7, outputTokens: 3, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0,
        firstByteMs: 1, durationMs: 2, streamed: false, clientAborted: false, sessionId: null, agentId: null, upstreamTarget: null };
      await Promise.race([
        killed.settleCredits(r.reservation, { model: 'm', inputTokens: 7, outputTokens: 3, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.25, at, log }),
        death,
      ]);
      expect(await reader.getMonthSpend('k1', month)).to.equal(0.25);
      const page = await reader.readRequestLog(at - 1, at + 1, null, 10);
      expect(page.records.map((record) => [record.requestId, record.credits])).to.deep.equal([['req_killed', 0.25]]);
    } finally {
      await connection.close();
      await reader.close();
      await deleteRedisPrefix(prefix);
    }
  });

  it('keeps everything under its prefix', async () => {
    const prefix = uniqueRedisPrefix('scope');
    const store = await connectTestRedisStore(prefix);
    try {
      await createApiKey(store, { id: 'k1', rateLimitPerMinute: 5 });
      const r = await store.reserveCredits('k1', '2025-06', 1, 5, 60_000);
      if (r.ok) await store.settleCredits(r.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 1 });
      const other = await connectTestRedisStore(uniqueRedisPrefix('scope-other'));
      expect(await other.listKeys()).to.deep.equal([]);
      expect(await other.getMonthSpend('k1', '2025-06')).to.equal(0);
      await other.close();
    } finally {
      await store.close();
      await deleteRedisPrefix(prefix);
    }
  });

  it('fails with a clear message when Redis cannot be reached', async () => {
    const { RedisStore: Store } = await import('../../lib/store/redis-store');
    try {
      await Store.connect({ url: 'redis://:hunter2@127.0.0.1:1', prefix: 'x:' });
      throw new Error('connected to nothing');
    } catch (err) {
      expect((err as Error).message).to.match(/cannot connect to Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1/);
      expect((err as Error).message).not.to.include('hunter2');
    }
  });
});
