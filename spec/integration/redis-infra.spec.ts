/**
 * The Redis test infrastructure works as the store's cluster and TLS tests will use it: a disposable
 * Redis Cluster (spec/helpers/redis-cluster.ts) reached with the `redis` package's cluster client,
 * failing over when a primary is killed; a disposable TLS Redis (spec/helpers/redis-tls.ts) reached with
 * `rediss://` and its CA, and refused without it. Neither touches the run's own Redis nor port 6379.
 */
import { expect } from 'chai';
import { createClient, createCluster } from 'redis';
import { CLUSTER_SLOTS, keySlot, startRedisCluster, type RedisCluster } from '../helpers/redis-cluster';
import { startTlsRedis, type TlsRedis } from '../helpers/redis-tls';

type Cluster = ReturnType<typeof createCluster>;

describe('Redis test infrastructure: a disposable cluster', function () {
  this.timeout(30_000);
  let cluster: RedisCluster;
  let client: Cluster;
  const clientErrors: Error[] = [];

  before(async function () {
    const started = Date.now();
    cluster = await startRedisCluster({ primaries: 3, replicasPerPrimary: 1 });
    if (process.env.REDIS_INFRA_TIMINGS) console.log(`      cluster started in ${Date.now() - started} ms`);
    client = createCluster({ rootNodes: cluster.urls.map((url) => ({ url })) });
    // A killed node's connection errors are expected; recorded, not thrown.
    client.on('error', (err: Error) => clientErrors.push(err));
    await client.connect();
  });

  after(async () => {
    if (client?.isOpen) client.destroy();
    await cluster?.stop();
  });

  it('runs 3 primaries with one replica each on loopback ports other than 6379, covering all slots', async () => {
    const nodes = await cluster.topology();
    expect(nodes).to.have.length(6);
    expect(cluster.urls).to.have.length(6);
    for (const url of cluster.urls) expect(url).to.match(/^redis:\/\/127\.0\.0\.1:\d+$/).and.not.match(/:6379$/);
    const primaries = nodes.filter((node) => node.role === 'primary');
    expect(primaries).to.have.length(3);
    for (const primary of primaries) {
      expect(nodes.filter((node) => node.primaryPort === primary.port)).to.have.length(1);
    }
    const covered = primaries.flatMap((node) => node.slots).reduce((sum, [first, last]) => sum + last - first + 1, 0);
    expect(covered).to.equal(CLUSTER_SLOTS);
  });

  it('computes key slots as the cluster does, hash tags included', async () => {
    const keys = ['foo', 'bar', '', '{user1000}.following', '{user1000}.followers', 'foo{}{bar}', 'foo{{bar}}zap', 'foo{bar}{zap}', 'gw:{key:abc}:spend', 'ключ'];
    const asked = createClient({ url: cluster.urls[0] });
    asked.on('error', () => undefined);
    await asked.connect();
    try {
      for (const key of keys) expect(keySlot(key), key).to.equal(await asked.clusterKeySlot(key));
    } finally {
      asked.destroy();
    }
    expect(keySlot('{user1000}.following')).to.equal(keySlot('{user1000}.followers'));
    expect(keySlot('foo')).to.equal(12182);
  });

  it('a cluster client SETs and GETs keys in different slots on different primaries, and EVALs two keys sharing a hash tag', async () => {
    const keys = ['infra:a', 'infra:b', 'infra:c', 'infra:d', 'infra:e', 'infra:f', 'infra:g', 'infra:h'];
    const primaries = new Set<number>();
    for (const key of keys) {
      await client.set(key, `value of ${key}`);
      expect(await client.get(key)).to.equal(`value of ${key}`);
      primaries.add((await cluster.primaryForKey(key)).port);
    }
    expect(new Set(keys.map(keySlot)).size).to.equal(keys.length);
    expect(primaries.size).to.equal(3);

    const tagged = ['{infra:tag}:count', '{infra:tag}:total'];
    const reply = await client.eval(
      "redis.call('INCRBY', KEYS[1], ARGV[1]); redis.call('INCRBY', KEYS[2], ARGV[2]); return { redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]) }",
      { keys: tagged, arguments: ['1', '40'] },
    );
    expect(reply).to.deep.equal(['1', '40']);
    expect(await client.get(tagged[1])).to.equal('40');
  });

  it('after a primary is killed and a replica promoted, a key on its slot is writable again through a cluster client; the killed node rejoins as a replica', async () => {
    const key = 'infra:failover';
    const slot = keySlot(key);
    await client.set(key, 'before');
    const old = await cluster.primaryForSlot(slot);
    const killedAt = Date.now();
    const slots = await cluster.killPrimary(old.port);
    expect(slots.some(([first, last]) => first <= slot && slot <= last)).to.equal(true);
    const promoted = await cluster.waitForFailover(slot);
    if (process.env.REDIS_INFRA_TIMINGS) console.log(`      failover in ${Date.now() - killedAt} ms`);
    expect(promoted.port).to.not.equal(old.port);
    expect(promoted.role).to.equal('primary');
    expect(cluster.nodes.find((node) => node.port === old.port)!.alive).to.equal(false);

    // The client connected before the kill does not get there by itself (node-redis 5.12: it rediscovers
    // the slots only on a MOVED or ASK reply, so a command for the dead node's slots waits in that node's
    // offline queue while it reconnects). A client connected now finds the promoted replica at once.
    let stuckSettled = false;
    const stuck = client.set(key, 'queued before the restart').finally(() => {
      stuckSettled = true;
    });
    const fresh = createCluster({ rootNodes: cluster.urls.map((url) => ({ url })) });
    fresh.on('error', () => undefined);
    await fresh.connect();
    try {
      await fresh.set(key, 'after');
      expect(await fresh.get(key)).to.equal('after');
      expect(await fresh.eval("return redis.call('INCR', KEYS[1])", { keys: ['{infra:failover}:n'] })).to.equal(1);
    } finally {
      fresh.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(stuckSettled, 'the old client wrote to a slot whose primary was killed: node-redis now recovers by itself').to.equal(false);

    // Once the old node is back it answers MOVED, and the waiting command goes to the new primary.
    const restarted = await cluster.restartNode(old.port);
    expect(restarted).to.include({ role: 'replica', primaryPort: promoted.port });
    await stuck;
    expect(await client.get(key)).to.equal('queued before the restart');
    await client.set(key, 'after the restart');
    expect(await client.get(key)).to.equal('after the restart');
  });
});

describe('Redis test infrastructure: a disposable TLS Redis', function () {
  this.timeout(20_000);
  let tls: TlsRedis;

  before(async () => {
    const started = Date.now();
    tls = await startTlsRedis();
    if (process.env.REDIS_INFRA_TIMINGS) console.log(`      TLS Redis started in ${Date.now() - started} ms`);
  });

  after(async () => {
    await tls?.stop();
  });

  it('a rediss:// client given the CA connects, authenticates and PINGs', async () => {
    expect(tls.url).to.match(/^rediss:\/\/default:[0-9a-f]+@127\.0\.0\.1:\d+$/).and.not.match(/:6379$/);
    const client = createClient({ url: tls.url, socket: { tls: true, ca: tls.caPem, reconnectStrategy: false } });
    client.on('error', () => undefined);
    await client.connect();
    try {
      expect(await client.ping()).to.equal('PONG');
      await client.set('infra:tls', 'yes');
      expect(await client.get('infra:tls')).to.equal('yes');
    } finally {
      client.destroy();
    }
  });

  it('a rediss:// client without the CA is refused (the certificate is not trusted)', async () => {
    const client = createClient({ url: tls.url, socket: { tls: true, reconnectStrategy: false, connectTimeout: 5000 } });
    client.on('error', () => undefined);
    const err = await client.connect().then(() => null, (error: Error) => error);
    if (client.isOpen) client.destroy();
    expect(err, 'connected without the CA').to.be.instanceOf(Error);
    expect((err as NodeJS.ErrnoException).code ?? err!.message).to.match(/SELF_SIGNED_CERT_IN_CHAIN|certificate/i);
  });

  it('a plain redis:// client to the TLS port is refused', async () => {
    const client = createClient({ url: tls.url.replace(/^rediss:/, 'redis:'), socket: { reconnectStrategy: false, connectTimeout: 5000 } });
    client.on('error', () => undefined);
    const err = await client.connect().then(() => null, (error: Error) => error);
    if (client.isOpen) client.destroy();
    expect(err, 'connected without TLS').to.be.instanceOf(Error);
  });

  it('a client with the CA but without the password is refused (NOAUTH)', async () => {
    const client = createClient({ url: `rediss://127.0.0.1:${tls.port}`, socket: { tls: true, ca: tls.caPem, reconnectStrategy: false } });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const err = await client.ping().then(() => null, (error: Error) => error);
      expect(err?.message).to.match(/NOAUTH/);
    } finally {
      if (client.isOpen) client.destroy();
    }
  });
});
