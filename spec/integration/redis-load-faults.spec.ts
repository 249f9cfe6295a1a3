/**
 * Load and faults on two gateway processes sharing a redis-server of this spec's own: under 12 clients
 * streaming back to back, Redis is killed and restarted, an instance is killed mid-stream (SIGKILL),
 * and both are restarted in turn (SIGTERM: a rolling restart). Then the request log is checked
 * against the upstream's usage request by request (each reply carries its own input figure, so a
 * record names its reply), the ledger against the log, and no refused request left a count behind.
 * About 30 s (five process starts, two drains); bounded: the load stops on a clock.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createClient } from 'redis';
import { RedisStore } from '../../lib/store/redis-store';
import { utcMonth } from '../../lib/store/month';
import { nativeTextEvents, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { testConfigObject } from '../helpers/gateway';
import { startGatewayProcess, writeTempConfig } from '../helpers/gateway-process';
import { nativeHeaders } from '../helpers/http-client';
import { freePort } from '../helpers/ports';
import { sleep, startRedisServer, type RedisServerProcess } from '../helpers/redis-process';

const KEY = 'sk-cs4-test-load-faults-key-0051';
/** Input figure of the n-th upstream reply: BASE + n, so a record names the reply it bills. */
const BASE = 1000;
const OUTPUT = 7;

interface Outcome { instance: string; status: number; marker: number | null; complete: boolean; sentAt: number }

describe('two instances on Redis under load, with faults: Redis killed, an instance killed mid-stream, a rolling restart', function () {
  this.timeout(90_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-load-faults-'));
  const prefix = 'load-faults:';
  let port = 0;
  let redis: RedisServerProcess;
  let upstream: FakeUpstream;
  let configFile = '';
  /** Upstream reply marker -> the instance that asked for it (each instance sends its own upstream secret). */
  const asked = new Map<number, string>();
  const startRedis = () => startRedisServer(['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
    '--appendonly', 'yes', '--appendfsync', 'always']);
  const startInstance = (name: string) => startGatewayProcess({
    GATEWAY_CONFIG: configFile, REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: prefix, TEST_UPSTREAM_API_KEY: `upstream-${name}`,
  }).then((process) => ({ name, process }));

  before(async () => {
    port = await freePort();
    redis = await startRedis();
    let replies = 0;
    upstream = await startFakeUpstream((request) => {
      replies += 1;
      asked.set(replies, String(request.headers['x-api-key']).replace('upstream-', ''));
      const events = nativeTextEvents(['a', 'b', 'c'], { input_tokens: BASE + replies, output_tokens: OUTPUT }, request.body.model);
      // A stream of about 150 ms, so kills and restarts find some in flight.
      return { kind: 'stream', events: events.flatMap((event, i) => (i >= 3 && i <= 5 ? [{ pauseMs: 50 }, event] : [event])) };
    });
    configFile = writeTempConfig(testConfigObject(upstream.url, {
      keys: [{ id: 'load', key: KEY, rateLimitPerMinute: 1_000_000 }], store: { timeoutMs: 500 },
    }, { maxRetries: 0 }));
  });
  after(async () => {
    await redis?.kill();
    await upstream?.close();
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(path.dirname(configFile), { recursive: true, force: true });
  });

  it('bills every reply the upstream gave exactly once, as reported; the ledger and the log add up; no 503 left a count', async () => {
    let live: Array<Awaited<ReturnType<typeof startInstance>>> = await Promise.all([startInstance('a1'), startInstance('b1')]);
    const all = [...live];
    const outcomes: Outcome[] = [];
    let loading = true;
    let turn = 0;
    const worker = async () => {
      while (loading) {
        const target = live[turn++ % live.length];
        const outcome: Outcome = { instance: target.name, status: 0, marker: null, complete: false, sentAt: Date.now() };
        try {
          const reply = await fetch(`${target.process.url}/v1/messages`, {
            method: 'POST', headers: Object.fromEntries(nativeHeaders(KEY)),
            body: JSON.stringify({ model: 'haiku', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
          });
          outcome.status = reply.status;
          const text = await reply.text();
          const marker = /"input_tokens":(\d+)/.exec(text);
          outcome.marker = marker ? Number(marker[1]) - BASE : null;
          outcome.complete = reply.status === 200 && text.includes('event: message_stop');
        } catch {
          // a reset: the instance was killed
        }
        outcomes.push(outcome);
      }
    };
    const workers = Array.from({ length: 12 }, worker);
    await sleep(1000);
    // Redis killed (SIGKILL) for two seconds, then back with what it had written (AOF, fsync always).
    const killedAt = Date.now();
    await redis.kill('SIGKILL');
    await sleep(2000);
    redis = await startRedis();
    await sleep(1500);
    // An instance killed mid-stream; a new one takes its place.
    const killed = live[0];
    killed.process.child.kill('SIGKILL');
    live = [live[1]];
    live.push(await startInstance('a2'));
    all.push(live[1]);
    await sleep(1500);
    // A rolling restart: each instance leaves the rotation, drains (SIGTERM) and is replaced.
    for (const name of ['b2', 'a3']) {
      const leaving = live[0];
      const next = await startInstance(name);
      all.push(next);
      live = [live[1], next];
      expect(await leaving.process.stop(), `${leaving.name} drained and exited 0`).to.equal(0);
      await sleep(500);
    }
    loading = false;
    await Promise.all(workers);
    await sleep(1500);
    const reader = await RedisStore.connect({ url: `redis://127.0.0.1:${port}`, prefix });
    try {
      const records = (await reader.readRequestLog(0, Date.now() + 60_000, null, 100_000)).records;
      const byMarker = new Map<number, number>();
      for (const record of records) {
        const marker = record.inputTokens - BASE;
        expect(asked.has(marker), `record ${record.requestId} bills a reply the upstream gave`).to.equal(true);
        expect(byMarker.has(marker), `reply ${marker} billed once`).to.equal(false);
        byMarker.set(marker, record.outputTokens);
      }
      // Every reply the upstream gave through an instance that was not killed is billed, as reported.
      const unbilled = [...asked].filter(([marker, instance]) => instance !== killed.name && !byMarker.has(marker));
      expect(unbilled, 'replies not billed').to.deep.equal([]);
      // A reply the killed instance had not settled yet (its settlements delayed by the outage wait in
      // its memory) is lost with it: the only loss allowed; what it did record is exact.
      for (const outcome of outcomes.filter((o) => o.complete)) {
        if (outcome.instance !== killed.name || byMarker.has(outcome.marker!)) expect(byMarker.get(outcome.marker!), `reply ${outcome.marker}`).to.equal(OUTPUT);
      }
      // The ledger adds up to the log.
      const [totals] = await reader.getUsage('load', utcMonth(Date.now()));
      expect(totals.requests).to.equal(records.length);
      expect(totals.inputTokens).to.equal(records.reduce((sum, r) => sum + r.inputTokens, 0));
      expect(Math.round(totals.credits * 1e9)).to.equal(records.reduce((sum, r) => sum + Math.round(r.credits * 1e9), 0));
      // 5xx only the 503s of the outage; resets only from the killed instance.
      expect(outcomes.filter((o) => o.status >= 500 && o.status !== 503)).to.deep.equal([]);
      expect(outcomes.filter((o) => o.status === 503).length, 'the outage was seen').to.be.greaterThan(0);
      expect(outcomes.filter((o) => o.status === 0 && o.instance !== killed.name)).to.deep.equal([]);
      expect(records.length, 'load ran').to.be.greaterThan(100);
      // The rate-limit window (a minute, longer than this test) counts the requests admitted, and
      // none answered 503 (a reset by the killed instance may have been admitted or not). Only an
      // admission already sent when Redis was killed may have run with its reply lost (the residual
      // case of docs/operations.md, Redis outage): a 503 sent before the kill may be counted, one
      // sent after it never (no offline queue replays it).
      const raw = await createClient({ url: `redis://127.0.0.1:${port}` }).connect();
      const counted = Number(await raw.get(`${prefix}{load}:rl`));
      await raw.close();
      const answered = outcomes.filter((o) => o.status !== 503 && o.status !== 0).length;
      const inFlightAtKill = outcomes.filter((o) => o.status === 503 && o.sentAt < killedAt).length;
      expect(counted).to.be.at.least(answered).and.at.most(answered + outcomes.filter((o) => o.status === 0).length + inFlightAtKill);
    } finally {
      await reader.close();
      for (const instance of all) await instance.process.stop();
    }
  });
});
