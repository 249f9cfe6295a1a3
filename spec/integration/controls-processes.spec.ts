/**
 * Several gateway processes sharing one Redis act as one: a key's rate limit and credit cap hold
 * across them, and a revocation made through the key CLI is refused by each on its next request.
 * And the in-memory store of a single process keeps its usage across a graceful restart (SIGTERM).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { boundInputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startGatedUpstream, type GatedUpstream } from '../helpers/gated-upstream';
import { testConfigObject, UPSTREAM_SECRET } from '../helpers/gateway';
import { runKeysProcess, startGatewayProcess, writeTempConfig, type GatewayProcess } from '../helpers/gateway-process';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';

const RL_KEY = 'sk-cs4-test-process-rl-0040';
const CAP_KEY = 'sk-cs4-test-process-cap-041';
const REVOKE_KEY = 'sk-cs4-test-process-rev-042';
const BODY = JSON.stringify({ model: 'haiku', max_tokens: 1000, messages: [{ role: 'user', content: 'hello' }] });

function native(url: string, secret: string) {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: BODY,
  }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });
}

describe('two gateway processes sharing one Redis', function () {
  this.timeout(60_000);
  const prefix = uniqueRedisPrefix('processes');
  let upstream: GatedUpstream;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let env: Record<string, string>;
  let cap: number;

  before(async () => {
    const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
    const worstCase = priceWorstCase(createCatalogue(config).resolve('haiku')!, boundInputTokens(Buffer.byteLength(BODY), config.reservation), 1000);
    cap = 4.5 * worstCase;
    upstream = await startGatedUpstream({ input_tokens: 10, output_tokens: 5 });
    const configFile = writeTempConfig(testConfigObject(upstream.url, {
      keys: [
        { id: 'process-rl', key: RL_KEY, rateLimitPerMinute: 4 },
        { id: 'process-cap', key: CAP_KEY, rateLimitPerMinute: 1000, monthlyCreditCap: cap },
        { id: 'process-revoke', key: REVOKE_KEY, rateLimitPerMinute: 1000 },
      ],
    }));
    env = { GATEWAY_CONFIG: configFile, REDIS_URL: testRedisUrl(), REDIS_PREFIX: prefix, TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET };
    [a, b] = await Promise.all([startGatewayProcess(env), startGatewayProcess(env)]);
  });

  after(async () => {
    upstream?.release();
    await Promise.all([a?.stop(), b?.stop()]);
    await upstream?.close();
    fs.rmSync(path.dirname(env.GATEWAY_CONFIG), { recursive: true, force: true });
    await deleteRedisPrefix(prefix);
  });

  it('holds one credit cap: of 10 requests in flight across both, the 4 that fit and a 5th cut to the credit left reach the upstream', async () => {
    const early: number[] = [];
    const replies = Array.from({ length: 10 }, (_, i) => native(i % 2 ? a.url : b.url, CAP_KEY).then((status) => {
      early.push(status);
      return status;
    }));
    // While the upstream holds the requests that fit, every other one must already be refused.
    await upstream.waitForReceived(5);
    for (let i = 0; i < 1500 && early.length < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(early).to.deep.equal([402, 402, 402, 402, 402]);
    expect(upstream.received()).to.equal(5);
    // Four whole, one with its max_tokens cut to the half worst case left.
    const sent = upstream.maxTokens();
    expect(sent.filter((max) => max === 1000)).to.have.length(4);
    expect(sent.find((max) => max !== 1000)).to.be.within(16, 999);
    upstream.release();
    const statuses = await Promise.all(replies);
    expect(statuses.filter((s) => s === 200)).to.have.length(5);
    expect(statuses.filter((s) => s === 402)).to.have.length(5);
    expect(upstream.received()).to.equal(5);
  });

  it('holds one rate limit: a key with 4 per minute gets 4 in total across both, then 429 from each', async () => {
    upstream.release();
    const statuses = [await native(a.url, RL_KEY), await native(b.url, RL_KEY), await native(a.url, RL_KEY), await native(b.url, RL_KEY)];
    expect(statuses).to.deep.equal([200, 200, 200, 200]);
    expect(await native(a.url, RL_KEY)).to.equal(429);
    expect(await native(b.url, RL_KEY)).to.equal(429);
  });

  it('a revocation made with the key CLI is refused by each process on its next request', async () => {
    expect([await native(a.url, REVOKE_KEY), await native(b.url, REVOKE_KEY)]).to.deep.equal([200, 200]);
    const revoked = await runKeysProcess(['revoke', 'process-revoke'], env);
    expect(revoked.status, revoked.stderr).to.equal(0);
    expect(revoked.stdout).to.include('revoked key process-revoke');
    expect([await native(b.url, REVOKE_KEY), await native(a.url, REVOKE_KEY)]).to.deep.equal([401, 401]);
    expect([await native(a.url, CAP_KEY), await native(b.url, RL_KEY)]).not.to.include(401);
  });
});

describe('one gateway process with the in-memory store', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let dir: string;
  let env: Record<string, string>;
  const KEY = 'sk-cs4-test-memory-proc-043';

  before(async () => {
    upstream = await startFakeUpstream();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-restart-'));
    const configFile = path.join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify(testConfigObject(upstream.url, { keys: [{ id: 'restart', key: KEY, rateLimitPerMinute: 1000 }] })));
    env = { GATEWAY_CONFIG: configFile, GATEWAY_STATE_FILE: path.join(dir, 'state.json'), TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET };
  });
  after(async () => {
    await upstream.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function usageRequests(): Promise<number> {
    const usage = await runKeysProcess(['usage', 'restart', '--json'], env);
    expect(usage.status, usage.stderr).to.equal(0);
    return JSON.parse(usage.stdout).models.reduce((sum: number, m: { requests: number }) => sum + m.requests, 0);
  }

  it('writes its usage on SIGTERM and reads it back at the next start', async () => {
    const first = await startGatewayProcess(env);
    expect([await native(first.url, KEY), await native(first.url, KEY)]).to.deep.equal([200, 200]);
    expect(await first.stop()).to.equal(0);
    expect(await usageRequests()).to.equal(2);

    const second = await startGatewayProcess(env);
    expect(second.output()).to.include('in-memory store state restored');
    expect(await native(second.url, KEY)).to.equal(200);
    expect(await second.stop()).to.equal(0);
    expect(await usageRequests()).to.equal(3);
  });
});
