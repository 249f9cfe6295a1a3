/**
 * The Redis store past one server: the store contract on a 3-primary, 3-replica Redis
 * Cluster and on a TLS Redis with a password, one round trip to Redis before a request's upstream
 * call (counted with INFO commandstats, single node and cluster), and the move of a store written in
 * the earlier layout. Real redis-server processes on loopback, started here.
 */
import { expect } from 'chai';
import { createClient } from 'redis';
import { toCreditUnits } from '../../lib/store/credits';
import { hashSecret } from '../../lib/keys/secrets';
import { RedisStore, type RedisStoreOptions } from '../../lib/store/redis-store';
import { MOVE_LOG_RECORD } from '../../lib/store/redis-scripts';

type RedisStoreRun = (script: string, keys: string[], args: string[]) => Promise<unknown>;
import { createGatedUpstreamTest } from '../helpers/cluster-gateway';
import { startRedisCluster } from '../helpers/redis-cluster';
import { useServer } from '../helpers/redis-process';
import { startTlsRedis } from '../helpers/redis-tls';
import { testRedisUrl, uniqueRedisPrefix, deleteRedisPrefix } from '../helpers/redis';
import { describeStoreContract } from '../helpers/store-contract';
import { describeAdmissionDeadline } from '../helpers/admission-deadline';

/**
 * Count the commands clients send to the servers at `urls` (MONITOR on each; the commands a script
 * runs inside the server, shown as `[0 lua]`, are not round trips and are not counted).
 * @returns `count()`, the commands seen so far, and `close()`
 */
async function monitorCommands(urls: readonly string[]): Promise<{ count: () => Promise<number>; close: () => Promise<void> }> {
  let seen = 0;
  const monitors = await Promise.all(urls.map(async (url) => {
    const client = await createClient({ url }).on('error', () => undefined).connect();
    await client.monitor((line: string) => {
      // Not the request's: a script's own commands, and the team directory's refresh every second (a
      // MULTI of the two `{teams}` hashes, lib/people/team-directory.ts), which may fall in the window.
      if (/\[\d+ lua\]/.test(line) || /"(MULTI|EXEC)"/i.test(line) || line.includes('{teams}')) return;
      seen += 1;
    });
    return client;
  }));
  return { count: async () => seen, close: async () => void monitors.forEach((client) => client.destroy()) };
}

/** The store contract on Redis stores connected with `options()` (read when each test starts), in `mode`. */
function describeRedisStoreContract(options: () => RedisStoreOptions, mode: RedisStore['mode']): void {
  describeStoreContract(
    async () => {
      let now = 0;
      const store = await RedisStore.connect({ ...options(), clock: () => now });
      expect(store.mode).to.equal(mode);
      return { store, setNow: (ms) => (now = ms) };
    },
    async (f) => f.store.close(),
  );
}

describe('Redis store on a Redis Cluster (3 primaries, 3 replicas, started here)', function () {
  this.timeout(60_000);
  const cluster = useServer(startRedisCluster);

  describe('store contract', () => {
    describeRedisStoreContract(() => ({ clusterNodes: [...cluster().urls], prefix: uniqueRedisPrefix('cluster') }), 'cluster');
  });

  describeAdmissionDeadline(() => RedisStore.connect({ clusterNodes: [...cluster().urls], prefix: uniqueRedisPrefix('cluster-deadline') }), (store) => store.close());

  it('writes a settlement and its request log record in one step: a record whose move failed is moved by the sweep, once', async () => {
    const store = await RedisStore.connect({ clusterNodes: [...cluster().urls], prefix: uniqueRedisPrefix('cluster-outbox') });
    const connection = (store as unknown as { connection: { run: RedisStoreRun; commands: { hDel: (...args: unknown[]) => Promise<number> } } }).connection;
    const run = connection.run.bind(connection);
    const hDel = connection.commands.hDel.bind(connection.commands);
    try {
      await store.createKey({ id: 'k-outbox', secret: { sha256: hashSecret('sk-cs4-outbox-secret-0040'), expiresAt: null }, last4: '0040', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null });
      const month = new Date().toISOString().slice(0, 7);
      const settleOne = async (requestId: string) => {
        const held = await store.reserveCredits('k-outbox', month, 1, null, 60_000);
        if (!held.ok) throw new Error('not held');
        await store.settleCredits(held.reservation, {
          model: 'model-haiku-4.5', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.25,
          log: { time: Date.now(), requestId, keyId: 'k-outbox', keyGroup: 'default', route: 'POST /v1/messages', model: 'model-haiku-4.5', status: 200, stopReason: 'end_turn', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.25, firstByteMs: 1, durationMs: 2, streamed: false, clientAborted: false, sessionId: null, agentId: null, upstreamTarget: null },
        });
      };
      const logged = async (requestId: string) => (await store.readRequestLog(0, Date.now() + 60_000, null, 1000)).records.filter((record) => record.requestId === requestId).length;
      // The instance "dies" after the settlement: the move into the log fails.
      connection.run = (script, keys, args) => (script === MOVE_LOG_RECORD ? Promise.reject(new Error('injected: killed after the settlement')) : run(script, keys, args));
      await settleOne('req_outbox_1');
      connection.run = run;
      expect(await store.getMonthSpend('k-outbox', month)).to.be.closeTo(0.25, 1e-9);
      expect(await logged('req_outbox_1'), 'not in the log yet').to.equal(0);
      expect(await store.requestLog.sweep()).to.equal(1);
      expect(await logged('req_outbox_1')).to.equal(1);
      // Killed between the move and the outbox's delete: the sweep moves it again, and appends nothing.
      connection.commands.hDel = () => Promise.reject(new Error('injected: killed after the move'));
      await settleOne('req_outbox_2');
      connection.commands.hDel = hDel;
      expect(await logged('req_outbox_2')).to.equal(1);
      expect(await store.requestLog.sweep()).to.equal(0);
      expect(await store.requestLog.sweep()).to.equal(0);
      expect([await logged('req_outbox_1'), await logged('req_outbox_2')], 'no duplicate').to.deep.equal([1, 1]);
      expect(await store.getMonthSpend('k-outbox', month)).to.be.closeTo(0.5, 1e-9);
    } finally {
      connection.run = run;
      await store.close();
    }
  });

  it('writes a team key\'s settlement, its team ledgers and its request log record in one step: the outbox is under the team\'s tag, swept once', async () => {
    const prefix = uniqueRedisPrefix('cluster-team-outbox');
    const store = await RedisStore.connect({ clusterNodes: [...cluster().urls], prefix });
    const connection = (store as unknown as { connection: { run: RedisStoreRun } }).connection;
    const run = connection.run.bind(connection);
    try {
      await store.createKey({ id: 'k-team-outbox', secret: { sha256: hashSecret('sk-cs4-team-outbox-0041'), expiresAt: null }, last4: '0041', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null, team: 'core', owner: 'alice' });
      const month = new Date().toISOString().slice(0, 7);
      const settleOne = async (requestId: string) => {
        const held = await store.reserveCredits('k-team-outbox', month, 1, null, 60_000, undefined, undefined, { team: 'core', owner: 'alice', memberCap: 10, teamCap: 100 });
        if (!held.ok) throw new Error('not held');
        // The instance "dies" after the settlement: the move into the log fails, the record waits in the outbox.
        connection.run = (script, keys, args) => (script === MOVE_LOG_RECORD ? Promise.reject(new Error('injected: killed after the settlement')) : run(script, keys, args));
        await store.settleCredits(held.reservation, {
          model: 'model-haiku-4.5', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.25,
          log: { time: Date.now(), requestId, keyId: 'k-team-outbox', keyGroup: 'default', route: 'POST /v1/messages', model: 'model-haiku-4.5', status: 200, stopReason: 'end_turn', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.25, firstByteMs: 1, durationMs: 2, streamed: false, clientAborted: false, sessionId: null, agentId: null, upstreamTarget: null },
        });
        connection.run = run;
      };
      const logged = async (requestId: string) => (await store.readRequestLog(0, Date.now() + 60_000, null, 1000)).records.filter((record) => record.requestId === requestId).length;
      await settleOne('req_team_outbox_1');
      // The outbox sits in the slot of the team's ledgers (the settlement script's keys share one slot).
      expect((await cluster().primaryForKey(`${prefix}{team:core}:k:k-team-outbox:log-outbox`)).port).to.equal((await cluster().primaryForKey(`${prefix}{team:core}:credits:${month}`)).port);
      expect([await store.getMonthSpend('k-team-outbox', month), await store.getTeamMonthSpend('core', month, 'alice'), await store.getTeamMonthSpend('core', month)]).to.deep.equal([0.25, 0.25, 0.25]);
      expect(await logged('req_team_outbox_1'), 'not in the log yet').to.equal(0);
      expect(await store.requestLog.sweep()).to.equal(1);
      expect(await store.requestLog.sweep()).to.equal(0);
      expect(await logged('req_team_outbox_1')).to.equal(1);
      // A record still in the outbox when the key leaves its team goes with the key, and the sweep finds it there.
      await settleOne('req_team_outbox_2');
      await store.updateKey('k-team-outbox', { team: null, owner: null });
      expect(await store.requestLog.sweep()).to.equal(1);
      expect([await logged('req_team_outbox_1'), await logged('req_team_outbox_2')], 'each once').to.deep.equal([1, 1]);
      expect(await store.getMonthSpend('k-team-outbox', month)).to.equal(0.5);
    } finally {
      connection.run = run;
      await store.close();
    }
  });

  it('keeps each API key\'s state in one slot: the keys of a key spread over the cluster by their hash tag', async () => {
    const prefix = uniqueRedisPrefix('slots');
    const store = await RedisStore.connect({ clusterNodes: [...cluster().urls], prefix });
    try {
      const ports = new Set<number>();
      for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) {
        await store.createKey({ id, secret: { sha256: hashSecret(`sk-cs4-slot-${id}`), expiresAt: null }, last4: id, rateLimitPerMinute: 5, allowedModels: null, monthlyCreditCap: 5 });
        const reserved = await store.reserveCredits(id, '2026-11', 1, 5, 60_000);
        if (reserved.ok) await store.settleCredits(reserved.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 1 });
        const home = await cluster().primaryForKey(`${prefix}{${id}}:key`);
        for (const name of [`{${id}}:secrets`, `{${id}}:credits:2026-11`, `{${id}}:usage:2026-11`, `{${id}}:usage-day:2026-11`]) {
          expect((await cluster().primaryForKey(prefix + name)).port, name).to.equal(home.port);
        }
        ports.add(home.port);
      }
      expect(ports.size, 'eight keys on more than one primary').to.be.greaterThan(1);
    } finally {
      await store.close();
    }
  });

  it('waits for one Redis command before the upstream call of each request (INFO commandstats of every primary)', async () => {
    const monitor = await monitorCommands((await cluster().topology()).filter((n) => n.role === 'primary').map((n) => n.url));
    const test = await createGatedUpstreamTest({ REDIS_CLUSTER_NODES: cluster().urls.join(','), REDIS_PREFIX: uniqueRedisPrefix('trips') });
    try {
      const before = await test.countBeforeUpstream(monitor.count, 10);
      expect(before, 'commands before the upstream call, per request after the first').to.deep.equal(Array(10).fill(1));
    } finally {
      await test.close();
      await monitor.close();
    }
  });
});

describe('Redis store: one round trip on one server', function () {
  this.timeout(30_000);
  it('waits for one Redis command before the upstream call of each request (INFO commandstats)', async () => {
    const monitor = await monitorCommands([testRedisUrl()]);
    const prefix = uniqueRedisPrefix('trips-single');
    const test = await createGatedUpstreamTest({ REDIS_URL: testRedisUrl(), REDIS_PREFIX: prefix });
    try {
      const before = await test.countBeforeUpstream(monitor.count, 10);
      expect(before).to.deep.equal(Array(10).fill(1));
    } finally {
      await test.close();
      await monitor.close();
      await deleteRedisPrefix(prefix);
    }
  });
});

describe('Redis store over TLS with a password (rediss://, a private CA)', function () {
  this.timeout(30_000);
  const tls = useServer(startTlsRedis);

  describe('store contract', () => {
    describeRedisStoreContract(() => ({ url: tls().url, tlsCa: tls().caPem, prefix: uniqueRedisPrefix('tls') }), 'single');
  });

  it('refuses to start without the CA, naming the URL without its password', async () => {
    try {
      await RedisStore.connect({ url: tls().url, prefix: 'x:', connectTimeoutMs: 2000 });
      throw new Error('connected without the CA');
    } catch (err) {
      expect((err as Error).message).to.match(/^cannot connect to Redis at rediss:\/\/default:\*\*\*@127\.0\.0\.1/);
      expect((err as Error).message).not.to.include(tls().password);
    }
  });

  it('serves a request through a gateway given REDIS_URL=rediss://... and REDIS_TLS_CA', async () => {
    const test = await createGatedUpstreamTest({ REDIS_URL: tls().url, REDIS_TLS_CA: tls().caFile, REDIS_PREFIX: uniqueRedisPrefix('tls-gw') });
    try {
      expect(await test.countBeforeUpstream(async () => 0, 1)).to.deep.equal([0]);
    } finally {
      await test.close();
    }
  });
});

describe('Redis store: moving a store written in the earlier layout', function () {
  this.timeout(30_000);
  it('keeps old secrets working, and spend, usage, holds in flight and pending alerts, under the new names', async () => {
    const prefix = uniqueRedisPrefix('layout1');
    const raw = await createClient({ url: testRedisUrl() }).connect();
    const sha = hashSecret('sk-cs4-issued-before-the-change');
    const record = { id: 'old', name: 'old', last4: 'ange', createdAt: '2026-01-01T00:00:00.000Z', revoked: false, rateLimitPerMinute: 5, allowedModels: null, monthlyCreditCap: 10, keyGroup: 'default' };
    try {
      // What the earlier store wrote (its redis-scripts.ts layout).
      await raw.sAdd(`${prefix}keys`, 'old');
      await raw.hSet(`${prefix}key:old`, Object.fromEntries(Object.entries(record).map(([k, v]) => [k, JSON.stringify(v)])));
      await raw.hSet(`${prefix}secrets:old`, sha, 'current');
      await raw.set(`${prefix}secret:${sha}`, 'old');
      await raw.hSet(`${prefix}credits:old:2026-11`, { spent: String(toCreditUnits(3)), 'hold:r-in-flight': `${toCreditUnits(1)}:${Date.now() + 600_000}` });
      await raw.pExpire(`${prefix}credits:old:2026-11`, 3_600_000);
      await raw.hSet(`${prefix}usage:old:2026-11`, { 'm|inputTokens': '100', 'm|outputTokens': '20', 'm|cacheCreationInputTokens': '0', 'm|cacheReadInputTokens': '0', 'm|credits': String(toCreditUnits(3)), 'm|requests': '2' });
      await raw.hSet(`${prefix}usage-day:old:2026-11`, { '2026-11-20|m|requests': '2', '2026-11-20|m|credits': String(toCreditUnits(3)) });
      await raw.set(`${prefix}rl:old`, '4');
      await raw.set(`${prefix}alert-fired:a1`, '1');
      await raw.zAdd(`${prefix}alerts-due`, { score: 5, value: 'a1' });
      await raw.hSet(`${prefix}alerts`, 'a1', JSON.stringify({ alert: { id: 'a1' }, attempts: 1 }));

      const [first, second] = await Promise.all([RedisStore.connect({ url: testRedisUrl(), prefix }), RedisStore.connect({ url: testRedisUrl(), prefix })]);
      await second.close();
      const store = first;
      try {
        expect((await store.findKeyBySecretHash(sha))).to.deep.equal(record);
        expect(await store.getMonthSpend('old', '2026-11')).to.equal(3);
        expect(await raw.pTTL(`${prefix}{old}:credits:2026-11`), 'with its expiry').to.be.within(1, 3_600_000);
        expect(await store.getUsage('old', '2026-11')).to.deep.equal([{ model: 'm', inputTokens: 100, outputTokens: 20, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 3, requests: 2 }]);
        expect(await store.getDailyUsage('old', '2026-11')).to.have.length(1);
        // The hold in flight still counts against the cap (3 spent + 1 held + 6 = 10 fits, 7 does not) and settles once.
        expect((await store.reserveCredits('old', '2026-11', 7, 10, 60_000)).ok).to.equal(false);
        await store.settleCredits({ id: 'r-in-flight', keyId: 'old', month: '2026-11', credits: 1 }, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.5 });
        expect(await store.getMonthSpend('old', '2026-11')).to.equal(3.5);
        const snapshot = (await store.identifyKey(sha, Date.now()))!;
        const admitted = await store.admit({ snapshot, secretSha256: sha, now: Date.now(), rateLimitWindowMs: 60_000, reservation: null });
        expect(admitted, 'the old rate-limit window is dropped').to.deep.include({ outcome: 'admitted', totalHits: 1 });
        expect(await store.leaseBudgetAlert(10, 1000)).to.deep.equal({ alert: { id: 'a1' }, attempts: 1 });
        expect(await store.claimBudgetAlert({ id: 'a1' } as never), 'fired once, before the move').to.equal(false);
        const left: string[] = [];
        for await (const batch of raw.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) left.push(...batch);
        expect(left.filter((name) => !name.includes('{') && !name.startsWith(`${prefix}secret:`)).sort()).to.deep.equal([`${prefix}keys`, `${prefix}layout`, `${prefix}request-log`].filter((n) => left.includes(n)).sort());
      } finally {
        await store.close();
      }
    } finally {
      await raw.close();
      await deleteRedisPrefix(prefix);
    }
  });
});
