/**
 * Gateways on a Redis Cluster: two instances sharing one cluster keep a key's cap, its
 * revocation and its rate limit exact across both, and a gateway rides out the failover of a primary
 * (SIGKILL, a replica promoted): fail closed (503) for the keys on that primary while it is down,
 * 200 for the others throughout, back to 200 by itself once the replica took over, and a ledger
 * that holds exactly the usage the upstream reported. One disposable 3-primary, 3-replica cluster
 * (spec/helpers/redis-cluster.ts) started here.
 */
import { expect } from 'chai';
import { createClient } from 'redis';
import { boundInputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { startGatedUpstream, type GatedUpstream } from '../helpers/gated-upstream';
import { nativeMessage } from '../helpers/fake-upstream';
import { uniqueRedisPrefix } from '../helpers/redis';
import { keySlot, startRedisCluster } from '../helpers/redis-cluster';
import { useServer } from '../helpers/redis-process';
import { sleep } from '../helpers/redis-process';

const MODEL = 'model-sonnet-4.6';
const MAX_TOKENS = 16;

/** The request body every test sends; `tag` goes in metadata.user_id so the upstream can tell keys apart. */
function messageBody(tag: string): string {
  return JSON.stringify({ model: MODEL, max_tokens: MAX_TOKENS, metadata: { user_id: tag }, messages: [{ role: 'user', content: 'Hi' }] });
}

interface Reply {
  status: number;
  body: any;
  startedAt: number;
  endedAt: number;
}

/** One native request with `secret` through `gateway`; never throws on a reply (a network error is status 0). */
async function send(gateway: TestGateway, secret: string, tag: string): Promise<Reply> {
  const startedAt = Date.now();
  try {
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: messageBody(tag),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // kept as text
    }
    return { status: response.status, body, startedAt, endedAt: Date.now() };
  } catch (err) {
    return { status: 0, body: String(err), startedAt, endedAt: Date.now() };
  }
}

/** Create a key through the admin API of `gateway`; returns its secret. */
async function createKey(gateway: TestGateway, body: Record<string, unknown>): Promise<string> {
  const created = await admin(gateway, 'POST', '/keys', { name: String(body.id), ...body });
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  return created.body.secret as string;
}

describe('gateways on a Redis Cluster (3 primaries, 3 replicas, started here)', function () {
  this.timeout(60_000);
  const cluster = useServer(startRedisCluster);

  describe('two instances in front of one held upstream', () => {
    let upstream: GatedUpstream;
    let first: TestGateway;
    let second: TestGateway;
    before(async () => {
      upstream = await startGatedUpstream({ input_tokens: 10, output_tokens: 5 });
      const env = { REDIS_CLUSTER_NODES: cluster().urls.join(','), REDIS_PREFIX: uniqueRedisPrefix('two-gw'), ADMIN_TOKEN };
      first = await startTestGateway({ env, upstream: { url: upstream.url } });
      second = await startTestGateway({ env, upstream: { url: upstream.url } });
      expect(first.gateway.store.kind).to.equal('redis');
    });
    after(async () => {
      upstream?.release();
      await first?.close();
      await second?.close();
      await upstream?.close();
    });

    it('never lets a key overshoot its cap with 50 requests in flight across both instances', async () => {
      const model = first.config.models.find((m) => m.id === MODEL)!;
      const worstCase = priceWorstCase(model, boundInputTokens(Buffer.byteLength(messageBody('cap')), first.config.reservation), MAX_TOKENS);
      const fits = 20;
      // Room for 20 worst cases and half of one more: the 21st does not fit.
      const cap = worstCase * (fits + 0.5);
      const secret = await createKey(first, { id: 'cap-key', monthlyCreditCap: cap, rateLimitPerMinute: 1000 });
      const before = upstream.received();
      const replies = Array.from({ length: 50 }, (_, i) => send(i % 2 === 0 ? first : second, secret, 'cap'));
      // Refusals come back at once; admitted requests wait at the upstream.
      await upstream.waitForReceived(before + fits);
      await sleep(300);
      expect(upstream.received() - before, 'requests that reached the upstream').to.equal(fits);
      upstream.release();
      const statuses = (await Promise.all(replies)).map((reply) => reply.status);
      const ok = statuses.filter((status) => status === 200).length;
      expect(ok, `statuses ${statuses.join(',')}`).to.equal(fits);
      expect(statuses.filter((status) => status === 402).length).to.equal(50 - fits);
      expect(ok * worstCase).to.be.at.most(cap);
      // The ledger, read through the other instance, once every settlement is in.
      let usage: any;
      for (let attempt = 0; attempt < 50; attempt++) {
        usage = (await admin(second, 'GET', '/keys/cap-key/usage')).body;
        if (usage.totals.requests === fits) break;
        await sleep(50);
      }
      expect(usage.totals.requests).to.equal(fits);
      expect(usage.totals.inputTokens).to.equal(fits * 10);
      expect(usage.totals.outputTokens).to.equal(fits * 5);
      expect(usage.totals.credits).to.be.at.most(cap);
    });

    it('refuses (401) on one instance the next request of a key revoked through the other, though it had just served it', async () => {
      const secret = await createKey(first, { id: 'revoke-key', rateLimitPerMinute: 1000 });
      expect((await send(second, secret, 'revoke')).status).to.equal(200);
      expect((await send(second, secret, 'revoke')).status).to.equal(200);
      expect((await admin(first, 'POST', '/keys/revoke-key/revoke')).status).to.equal(200);
      const refused = await send(second, secret, 'revoke');
      expect(refused.status).to.equal(401);
      expect(refused.body.error.type).to.equal('authentication_error');
      expect((await send(first, secret, 'revoke')).status).to.equal(401);
    });

    it('counts one rate limit across both instances: of 2R requests alternating between them, exactly R pass', async () => {
      const limit = 10;
      const secret = await createKey(second, { id: 'rate-key', rateLimitPerMinute: limit });
      const replies = await Promise.all(Array.from({ length: 2 * limit }, (_, i) => send(i % 2 === 0 ? first : second, secret, 'rate')));
      const statuses = replies.map((reply) => reply.status);
      expect(statuses.filter((status) => status === 200).length, statuses.join(',')).to.equal(limit);
      expect(statuses.filter((status) => status === 429).length, statuses.join(',')).to.equal(limit);
      // And per instance, both passed some and refused some (the count is shared, not per process).
      expect((await send(first, secret, 'rate')).status).to.equal(429);
      expect((await send(second, secret, 'rate')).status).to.equal(429);
    });
  });

  describe('failover of a primary under load', () => {
    const STORE_TIMEOUT_MS = 2000;
    const USAGE = { input_tokens: 11, output_tokens: 7 };
    const handler = (request: { body: any }) => ({ kind: 'json' as const, body: nativeMessage('ok', USAGE, request.body?.model) });
    let first: TestGateway;
    let second: TestGateway;
    const prefix = uniqueRedisPrefix('failover');
    before(async () => {
      // With Redis's default (cluster-require-full-coverage yes) every node answers CLUSTERDOWN, to
      // every key, from the moment the dead primary is marked failed until its replica takes over
      // (about 1.5 s here): keys on the other primaries could not be served then, whatever the gateway
      // does. Serving them through a failover needs full coverage off, set here on every node.
      for (const url of cluster().urls) {
        const client = await createClient({ url }).on('error', () => undefined).connect();
        await client.configSet('cluster-require-full-coverage', 'no');
        client.destroy();
      }
      const env = { REDIS_CLUSTER_NODES: cluster().urls.join(','), REDIS_PREFIX: prefix, ADMIN_TOKEN };
      // The default store timeout: a shorter one turns an event-loop stall of the test process (its
      // gateways, upstream and clients share it) into a timeout, and a 503 for a healthy key.
      const overrides = { store: { timeoutMs: STORE_TIMEOUT_MS } };
      first = await startTestGateway({ env, overrides, handler });
      second = await startTestGateway({ env, overrides, handler });
    });
    after(async () => {
      await first?.close();
      await second?.close();
    });

    it('fails closed (503) only for keys on the killed primary, recovers by itself after the failover, and bills each served request once', async () => {
      // Two keys on each primary, by the hash tag {<id>}.
      const primaries = (await cluster().topology()).filter((node) => node.role === 'primary');
      const ids: string[] = [];
      const home = new Map<string, number>();
      for (let i = 0; ids.length < 2 * primaries.length; i++) {
        const id = `fo-${i}`;
        const slot = keySlot(id);
        const port = primaries.find((node) => node.slots.some(([a, b]) => a <= slot && slot <= b))!.port;
        if ([...home.values()].filter((p) => p === port).length >= 2) continue;
        ids.push(id);
        home.set(id, port);
      }
      // The primary killed holds the request log too: a record whose settlement took effect must still
      // reach the log after the failover.
      const victimPort = (await cluster().primaryForKey(`${prefix}request-log`)).port;
      const victims = ids.filter((id) => home.get(id) === victimPort);
      const others = ids.filter((id) => home.get(id) !== victimPort);
      const secrets = new Map<string, string>();
      for (const id of ids) secrets.set(id, await createKey(first, { id, rateLimitPerMinute: 100_000 }));

      // Steady load: two workers per key, each sending one request at a time, alternating instances.
      const replies = new Map<string, Reply[]>(ids.map((id) => [id, []]));
      let running = true;
      const worker = async (id: string, offset: number) => {
        for (let n = offset; running; n++) {
          const reply = await send(n % 2 === 0 ? first : second, secrets.get(id)!, id);
          replies.get(id)!.push(reply);
          if (reply.status !== 200) await sleep(20);
        }
      };
      const workers = ids.flatMap((id) => [worker(id, 0), worker(id, 1)]);

      await sleep(1000);
      let lag = 0;
      let tick = Date.now();
      const lagTimer = setInterval(() => {
        lag = Math.max(lag, Date.now() - tick - 10);
        tick = Date.now();
      }, 10);
      const killedAt = Date.now();
      const slots = await cluster().killPrimary(victimPort);
      const promoted = await cluster().waitForFailover(slots[0][0]);
      const failedOverAt = Date.now();
      // Keep the load going until every victim key has been served again, and a little after.
      const recoveryDeadline = failedOverAt + 10_000;
      while (Date.now() < recoveryDeadline && !victims.every((id) => replies.get(id)!.some((r) => r.status === 200 && r.startedAt > failedOverAt))) {
        await sleep(50);
      }
      const recoveredAt = Date.now();
      await sleep(1500);
      running = false;
      await Promise.all(workers);
      clearInterval(lagTimer);

      const all = [...replies.values()].flat();
      const summary = ids.map((id) => {
        const list = replies.get(id)!;
        return `${id}@${home.get(id)}${victims.includes(id) ? '*' : ''}: ${list.filter((r) => r.status === 200).length} ok, ${list.filter((r) => r.status === 503).length} 503`;
      }).join('; ');
      // eslint-disable-next-line no-console
      console.log(`      failover: primary ${victimPort} killed, ${promoted.port} serving after ${failedOverAt - killedAt} ms; victims served again ${recoveredAt - failedOverAt} ms later; ${all.length} requests (${summary}); event loop lag up to ${lag} ms`);

      // Every reply is 200 or the native 503 of an unreachable store, and none waited much past store.timeoutMs.
      for (const reply of all) {
        expect([200, 503], JSON.stringify(reply.body)).to.include(reply.status);
        if (reply.status === 503) {
          expect(reply.body).to.have.property('type', 'error');
          expect(reply.body.error).to.have.property('type', 'api_error');
          expect(reply.body.error.message).to.be.a('string');
        }
        expect(reply.endedAt - reply.startedAt, 'request duration (ms)').to.be.below(STORE_TIMEOUT_MS + 1000);
      }
      // Keys on the other primaries: 200 throughout, the outage included.
      for (const id of others) {
        const list = replies.get(id)!;
        const outageLines = [...first.logLines, ...second.logLines].filter((l) => l.message === 'store unreachable').map((l) => `${l.operation}: ${l.error}`);
        expect(list.filter((r) => r.status !== 200).length, `non-200 replies for ${id} (on ${home.get(id)}); store errors: ${[...new Set(outageLines)].join(' | ')}`).to.equal(0);
        expect(list.filter((r) => r.startedAt > killedAt && r.endedAt < failedOverAt).length, `${id} served during the outage`).to.be.greaterThan(0);
      }
      // Keys on the killed primary: refused (fail closed) during the outage, served again after the failover.
      expect(recoveredAt - failedOverAt, 'ms from the failover until every key on the killed primary was served again').to.be.below(5000);
      for (const id of victims) {
        const list = replies.get(id)!;
        expect(list.some((r) => r.status === 503 && r.startedAt >= killedAt), `${id}: 503 while its primary was down`).to.equal(true);
        expect(list.some((r) => r.status === 200 && r.startedAt > failedOverAt), `${id}: served again after the failover`).to.equal(true);
      }

      // The ledger: for each key, exactly what the upstream reported for the requests it served.
      const served = new Map<string, number>(ids.map((id) => [id, 0]));
      for (const request of [...first.upstream.requests, ...second.upstream.requests]) {
        const tag = request.body?.metadata?.user_id;
        if (served.has(tag)) served.set(tag, served.get(tag)! + 1);
      }
      for (const id of ids) {
        expect(served.get(id), `upstream requests for ${id} = its 200 replies`).to.equal(replies.get(id)!.filter((r) => r.status === 200).length);
      }
      const ledger = async () => {
        const rows = await Promise.all(ids.map(async (id) => {
          const usage = await admin(first, 'GET', `/keys/${id}/usage`);
          return usage.status === 200 ? `${usage.body.totals.requests}/${usage.body.totals.inputTokens}/${usage.body.totals.outputTokens}` : `status ${usage.status}`;
        }));
        return rows;
      };
      const expected = ids.map((id) => `${served.get(id)}/${served.get(id)! * USAGE.input_tokens}/${served.get(id)! * USAGE.output_tokens}`);
      // Settlements that failed during the outage are retried every second: wait until the ledger is
      // right, or has not changed for 2.5 s.
      let rows = await ledger();
      let steadySince = Date.now();
      const ledgerDeadline = Date.now() + 15_000;
      while (JSON.stringify(rows) !== JSON.stringify(expected) && Date.now() - steadySince < 2500 && Date.now() < ledgerDeadline) {
        await sleep(100);
        const next = await ledger();
        if (JSON.stringify(next) !== JSON.stringify(rows)) steadySince = Date.now();
        rows = next;
      }
      expect(Object.fromEntries(ids.map((id, i) => [id, rows[i]])), 'ledger requests/input/output per key')
        .to.deep.equal(Object.fromEntries(ids.map((id, i) => [id, expected[i]])));
      // The request log: one record per request served, for every key (records retried after the failover included).
      const logged = async () => Promise.all(ids.map(async (id) => {
        const reply = await fetch(`${first.url}/admin/v1/requests?keyId=${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        return (await reply.text()).split('\n').filter((line) => line.trim() !== '').length;
      }));
      let counts = await logged();
      const logDeadline = Date.now() + 5000;
      while (counts.some((count, i) => count !== served.get(ids[i])) && Date.now() < logDeadline) {
        await sleep(200);
        counts = await logged();
      }
      expect(counts, 'request log records per key').to.deep.equal(ids.map((id) => served.get(id)));
    });
  });
});
