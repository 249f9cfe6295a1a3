/**
 * Metrics that tell the truth after a reload: a reload that changes a pool's targets (here their
 * weights) gets the group a new upstream client; `/metrics` must then report each target once, from
 * the client in use, as `GET /admin/v1/upstreams` does, never the sum of the old and the new client.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { startGateway, type RunningGateway } from '../../lib/server';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createCapturingLogger, KEYS, testConfigObject } from '../helpers/gateway';
import { TARGET_SECRETS } from '../helpers/pool-gateway';

const ADMIN_TOKEN = 'admin-token-reload-0123456789abcdef';

describe('metrics after a reload: a target\'s series are replaced, never added to', function () {
  this.timeout(30_000);
  let fakes: FakeUpstream[] = [];
  let running: RunningGateway | undefined;
  afterEach(async () => {
    await running?.close();
    await Promise.all(fakes.map((fake) => fake.close()));
    running = undefined;
    fakes = [];
  });

  it('reloads new weights under load: gateway_upstream_target_* match /admin/v1/upstreams, `up` reads 1 per target', async () => {
    Object.assign(process.env, TARGET_SECRETS);
    fakes = [await startFakeUpstream(), await startFakeUpstream()];
    let weights = [1, 1];
    const configObject = () => ({
      ...testConfigObject('http://127.0.0.1:1'),
      upstream: { targets: [{ id: 'a', url: fakes[0].url, apiKeyEnv: 'POOL_KEY_A', weight: weights[0] }, { id: 'b', url: fakes[1].url, apiKeyEnv: 'POOL_KEY_B', weight: weights[1] }], timeoutMs: 5000 },
    });
    const env = { PORT: '0', ADMIN_TOKEN };
    const { logger } = createCapturingLogger();
    running = await startGateway({
      config: parseConfig(configObject(), env), loadConfig: () => parseConfig(configObject(), env), logger, host: '127.0.0.1', requestScope: false,
    });
    const client = new Anthropic({ apiKey: KEYS.all, baseURL: running.url, maxRetries: 0 });
    const ask = () => client.messages.create({ model: 'model-sonnet-4.6', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });

    // Load on four connections while the weights change twice.
    let stop = false;
    let served = 0;
    const load = Promise.all(Array.from({ length: 4 }, async () => {
      while (!stop) {
        await ask();
        served++;
      }
    }));
    for (const next of [[2, 1], [3, 1]]) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      weights = next;
      expect(await running.gateway.reload()).to.deep.include({ ok: true, reloaded: ['upstream', 'keyGroups'] });
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    stop = true;
    await load;
    expect(served).to.be.greaterThan(4);

    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    const admin = await (await fetch(`${running.url}/admin/v1/upstreams`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as any;
    const targets = admin.data[0].targets as Array<{ id: string; requests: number; failures: number; weight: number }>;
    expect(targets.map((target) => [target.id, target.weight])).to.deep.equal([['a', 3], ['b', 1]]);
    for (const target of targets) {
      expect(seriesValues(metrics, 'gateway_upstream_target_up', target.id), `up of ${target.id}`).to.deep.equal([1]);
      expect(seriesValues(metrics, 'gateway_upstream_target_requests_total', target.id), `requests of ${target.id}`).to.deep.equal([target.requests]);
      expect(seriesValues(metrics, 'gateway_upstream_target_failures_total', target.id)).to.deep.equal([target.failures]);
    }
    // The new client counts only what it sent since the last reload, not every request served.
    const counted = targets.reduce((sum, target) => sum + target.requests, 0);
    expect(counted).to.be.greaterThan(0).and.lessThan(fakes[0].requests.length + fakes[1].requests.length);
  });
});

/** The values of every series of `name` for target `target` in a Prometheus text. */
function seriesValues(text: string, name: string, target: string): number[] {
  return text.split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(`target="${target}"`))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
}
