/**
 * Redis outage, with a real Redis server of this spec's own (on a free loopback port) that
 * is stopped and started again: requests fail closed with 503 in each route's shape, /health reports
 * the store unreachable, the gateway recovers by itself, and `store.failOpen` serves known keys
 * unmetered, logging every such request. A request answered 503 leaves no hold or rate-limit count,
 * whether Redis was down (no offline queue) or stalled (SIGSTOP: the admission's deadline). A stalled
 * Redis makes sign-ins and a session's admin calls (the people role) 503 after the store timeout too.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { ADMIN_TOKEN } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, isChatError, isNativeError, nativeHeaders, rawRequest } from '../helpers/http-client';
import { startOidcProvider } from '../helpers/oidc-provider';
import { CLIENT, PEOPLE, signInOverrides } from '../helpers/people';
import { freePort } from '../helpers/ports';
import { request, signIn } from '../helpers/sign-in-client';
import { RedisKeys } from '../../lib/store/redis-keys';
import { utcMonth } from '../../lib/store/month';

/** The port of this spec's redis-server, picked in `before`. */
let PORT = 0;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-redis-outage-'));

function startRedis(): void {
  // Saved to disk on shutdown and loaded at start, so the keys survive the outage like a real server's.
  execFileSync('redis-server', ['--port', String(PORT), '--bind', '127.0.0.1', '--dir', dir, '--dbfilename', 'outage.rdb',
    '--save', '', '--appendonly', 'no', '--daemonize', 'yes', '--pidfile', path.join(dir, 'redis.pid')]);
  for (let i = 0; i < 100; i++) {
    if (spawnSync('redis-cli', ['-p', String(PORT), 'ping']).stdout?.toString().includes('PONG')) return;
    spawnSync('sleep', ['0.05']);
  }
  throw new Error(`redis-server did not start on port ${PORT}`);
}

function stopRedis(): void {
  spawnSync('redis-cli', ['-p', String(PORT), 'shutdown', 'save']);
  for (let i = 0; i < 100; i++) {
    if (spawnSync('redis-cli', ['-p', String(PORT), 'ping']).status !== 0) return;
    spawnSync('sleep', ['0.05']);
  }
}

const nativeRequest = { path: '/v1/messages', headers: nativeHeaders(), body: { model: 'haiku', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] } };
const chatRequest = { path: '/v1/chat/completions', headers: chatHeaders(), body: { model: 'haiku', messages: [{ role: 'user', content: 'hi' }] } };

async function waitUntil(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('Redis outage (a redis-server of its own)', function () {
  this.timeout(60_000);
  let gw: TestGateway | undefined;
  before(async () => {
    PORT = await freePort();
    startRedis();
  });
  afterEach(async () => {
    startRedis();
    await gw?.close();
    gw = undefined;
  });
  after(() => {
    spawnSync('redis-cli', ['-p', String(PORT), 'shutdown', 'nosave']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = (failOpen: boolean) => startTestGateway({
    env: { REDIS_URL: `redis://127.0.0.1:${PORT}`, REDIS_PREFIX: `outage-${randomBytes(4).toString('hex')}:`, ADMIN_TOKEN },
    overrides: { store: { failOpen, timeoutMs: 500 } },
  });

  it('fails closed with 503 while Redis is down, reports it on /health, and recovers by itself', async () => {
    gw = await start(false);
    const first = await rawRequest(gw.url, nativeRequest);
    expect(first.status, JSON.stringify(gw.logLines.filter((l) => l.level !== 'info'))).to.equal(200);
    expect(gw.gateway.store.kind).to.equal('redis');
    const posts = () => gw!.upstream.requests.filter((r) => r.method === 'POST').length;
    const before = posts();

    stopRedis();
    const logsBefore = gw.logLines.length;
    const native = await rawRequest(gw.url, nativeRequest);
    expect(native.status).to.equal(503);
    // The outage line names the request that got the 503 (written by the error handler; this
    // gateway, like `npm start`, runs without a request scope).
    const outage = gw.logLines.slice(logsBefore).filter((l) => l.message === 'store unreachable');
    expect(outage).to.have.length(1);
    // The key was found in the store's copy of records it has seen; the admission is the first call to fail.
    expect(outage[0]).to.include({ level: 'error', operation: 'admit', request_id: native.headers['request-id'] });
    expect(outage[0].error).to.be.a('string').that.is.not.empty;
    expect(isNativeError(native.json)).to.equal(true);
    expect(native.json.error.type).to.equal('api_error');
    const chat = await rawRequest(gw.url, chatRequest);
    expect(chat.status).to.equal(503);
    expect(isChatError(chat.json)).to.equal(true);
    expect(chat.json.error.code).to.equal('service_unavailable');
    const health = await rawRequest(gw.url, { method: 'GET', path: '/health', headers: [] });
    expect(health.status).to.equal(503);
    expect(health.json.store).to.deep.include({ kind: 'redis', reachable: false });
    expect((await rawRequest(gw.url, { method: 'GET', path: '/healthz', headers: [] })).status).to.equal(200);
    // Nothing went upstream unmetered.
    expect(posts()).to.equal(before);
    // The spend routes answer 503 within the store timeout instead of waiting for Redis.
    for (const path of ['/admin/v1/usage?groupBy=key', '/admin/v1/requests', '/admin/v1/keys/team-all/usage']) {
      const reply = await rawRequest(gw.url, { method: 'GET', path, headers: [['authorization', `Bearer ${ADMIN_TOKEN}`]] });
      expect(reply.status, path).to.equal(503);
    }

    startRedis();
    await waitUntil(async () => (await rawRequest(gw!.url, nativeRequest)).status === 200, 'recovery');
    expect((await rawRequest(gw.url, chatRequest)).status).to.equal(200);
    const healthy = await rawRequest(gw.url, { method: 'GET', path: '/health', headers: [] });
    expect(healthy.json.store).to.deep.include({ reachable: true });
  });

  /** What a fault under load left: the statuses answered, how many were 503, and the run's Redis keys. */
  interface FaultRun {
    statuses: number[];
    refused: number;
    keys: RedisKeys;
    month: string;
    /** `redis-cli --raw` on this spec's Redis; its output, trimmed. */
    cli(...args: string[]): string;
  }

  /**
   * A gateway on this spec's Redis (a prefix of its own, store.timeoutMs 500 ms) under load, 8 clients
   * back to back each waiting 20 ms between requests, while `fault` runs (after 300 ms of load; the
   * load goes on 1 s after it). Checks that some requests were answered 503 (`during`: when) and every
   * other 200, that no hold is left once the delayed settlements of the admitted requests are in (a
   * hold nothing settles outlives its expiry as an `expired:` entry; the guard retries every second),
   * and that the rate-limit window counts exactly the requests not answered 503.
   */
  async function runFaultUnderLoad(fault: () => Promise<void>, during: string): Promise<FaultRun> {
    const prefix = `outage-${randomBytes(4).toString('hex')}:`;
    gw = await startTestGateway({
      env: { REDIS_URL: `redis://127.0.0.1:${PORT}`, REDIS_PREFIX: prefix },
      overrides: { store: { timeoutMs: 500 } },
    });
    const statuses: number[] = [(await rawRequest(gw.url, nativeRequest)).status];
    expect(statuses[0]).to.equal(200);
    let loading = true;
    const worker = async () => {
      while (loading) {
        statuses.push((await rawRequest(gw!.url, nativeRequest)).status);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    await new Promise((r) => setTimeout(r, 300));
    await fault();
    await new Promise((r) => setTimeout(r, 1000));
    loading = false;
    await Promise.all(workers);
    const refused = statuses.filter((s) => s === 503).length;
    expect(refused, `requests answered 503 ${during}`).to.be.greaterThan(0);
    expect(statuses.filter((s) => s !== 200 && s !== 503), JSON.stringify(statuses)).to.deep.equal([]);
    const keys = new RedisKeys(prefix);
    const month = utcMonth(Date.now());
    const cli = (...args: string[]) => spawnSync('redis-cli', ['-p', String(PORT), '--raw', ...args]).stdout.toString().trim();
    const unsettled = () => cli('HKEYS', keys.credits('team-all', month)).split('\n').filter((f) => /^(hold|expired):/.test(f));
    await waitUntil(async () => unsettled().length === 0, 'the holds settled').catch(() => undefined);
    expect(unsettled(), 'holds left behind').to.deep.equal([]);
    // Every request counted in the rate-limit window was answered by something other than a 503.
    expect(Number(cli('GET', keys.rate('team-all'))), 'requests counted').to.equal(statuses.length - refused);
    return { statuses, refused, keys, month, cli };
  }

  it('Redis stopped for two seconds under load: no hold or rate-limit count of a request answered 503 remains', async () => {
    await runFaultUnderLoad(async () => {
      stopRedis();
      // A refused admission waits for no queue: its 503 comes before the store timeout (500 ms).
      const startedAt = Date.now();
      expect((await rawRequest(gw!.url, nativeRequest)).status).to.equal(503);
      expect(Date.now() - startedAt).to.be.below(400);
      await new Promise((r) => setTimeout(r, 2000));
      startRedis();
    }, 'during the outage');
  });

  it('Redis stalled (SIGSTOP) past store.timeoutMs under load: the admissions answered 503 run late and count and hold nothing', async () => {
    const { statuses, refused, keys, month, cli } = await runFaultUnderLoad(async () => {
      // Stopped, not killed: the connection stays up, and the admissions sent meanwhile wait in the
      // server's socket; they run when it resumes, long after the gateway answered them 503.
      const pid = Number(fs.readFileSync(path.join(dir, 'redis.pid'), 'utf8'));
      process.kill(pid, 'SIGSTOP');
      try {
        await new Promise((r) => setTimeout(r, 1500));
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    }, 'during the stall');
    // Nothing settled for a 503 either: the ledger counts the requests answered 200.
    const requests = cli('HGETALL', keys.usage('team-all', month)).split('\n');
    const counted = requests.reduce((sum, field, i) => (i % 2 === 0 && field.endsWith('|requests') ? sum + Number(requests[i + 1]) : sum), 0);
    expect(counted, 'requests in the ledger').to.equal(statuses.length - refused);
  });

  it('with store.failOpen serves known keys unmetered and logs every such request', async () => {
    gw = await start(true);
    expect((await rawRequest(gw.url, nativeRequest)).status).to.equal(200);
    expect((await rawRequest(gw.url, chatRequest)).status).to.equal(200);

    stopRedis();
    const logsBefore = gw.logLines.length;
    for (const request of [nativeRequest, chatRequest, nativeRequest]) {
      expect((await rawRequest(gw.url, request)).status).to.equal(200);
    }
    const unmetered = gw.logLines.slice(logsBefore).filter((l) => String(l.message).includes('served unmetered'));
    // Fail open writes these lines inside the store guard, so its requests keep the request scope.
    for (const line of unmetered) expect(line.request_id, JSON.stringify(line)).to.match(/^req_/);
    // Each of the three requests logs its admission (key check, rate-limit count and reservation in one step).
    expect(unmetered.filter((l) => l.operation === 'admit')).to.have.length(3);
    expect(unmetered).to.have.length(3);
    // A key never seen before the outage is not let in.
    const unknown = await rawRequest(gw.url, { ...nativeRequest, headers: nativeHeaders('sk-cs4-never-seen-key-0007') });
    expect(unknown.status).to.equal(503);
  });

  it('Redis stalled (SIGSTOP): a session\'s admin call and a sign-in answer 503 in the admin shape after store.timeoutMs, never hang', async () => {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const provider = await startOidcProvider({ users: PEOPLE, clientId: CLIENT.id, clientSecret: CLIENT.secret, redirectUris: [`${baseUrl}/dashboard/callback`], groupsInIdToken: true });
    try {
      gw = await startTestGateway({
        env: { REDIS_URL: `redis://127.0.0.1:${PORT}`, REDIS_PREFIX: `outage-${randomBytes(4).toString('hex')}:`, TEST_OIDC_CLIENT_SECRET: CLIENT.secret, PORT: String(port) },
        overrides: { ...signInOverrides(baseUrl, provider.issuer), store: { timeoutMs: 500 } },
      });
      const bob = await signIn(baseUrl, 'bob');
      const me = () => request(`${baseUrl}/admin/v1/me`, { headers: { cookie: `gateway_session=${bob.sessionCookie}` } });
      expect((await me()).status).to.equal(200);
      const pid = Number(fs.readFileSync(path.join(dir, 'redis.pid'), 'utf8'));
      process.kill(pid, 'SIGSTOP');
      try {
        for (const call of [me, () => request(`${baseUrl}/dashboard/login`)]) {
          const started = Date.now();
          // Bounded here so that a hanging call fails the test (and Redis is resumed) rather than the run.
          const reply = await Promise.race([call(), new Promise<null>((resolve) => setTimeout(() => resolve(null), 5000))]);
          expect(reply, 'no answer within 5 s').to.not.equal(null);
          expect(Date.now() - started, 'answered within the store timeout and a margin').to.be.below(2500);
          expect(reply!.status).to.equal(503);
          expect(JSON.parse(reply!.body)).to.deep.include({ type: 'error' }).and.nested.include({ 'error.type': 'api_error' });
          expect(reply!.headers['retry-after']).to.equal('1');
        }
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      expect((await me()).status, 'the session works again once Redis answers').to.equal(200);
    } finally {
      await provider.close();
    }
  });
});
