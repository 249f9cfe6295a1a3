/**
 * A rolling restart without refused connections: two gateway processes (`node dist/lib/server.js`) on
 * one Redis behind a round-robin load balancer that health-checks `/health`, under steady load; each
 * instance in turn gets SIGTERM, drains (`/health` 503 `draining` while it still accepts, for
 * `shutdownDelayMs`), stops, and is started again on its port. No client request may fail, the
 * balancer may meet no refused or reset connection, and its health checks must have seen `draining`.
 */
import { expect } from 'chai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS, testConfigObject, UPSTREAM_SECRET } from '../helpers/gateway';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../helpers/gateway-process';
import { nativeHeaders } from '../helpers/http-client';
import { freePort } from '../helpers/ports';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';
import { startRoundRobinProxy, type RoundRobinProxy } from '../helpers/round-robin-proxy';

/** Long enough for a few of the balancer's 100 ms health checks to see `draining`. */
const SHUTDOWN_DELAY_MS = 600;

describe('rolling restart of two instances behind a load balancer', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream | undefined;
  let proxy: RoundRobinProxy | undefined;
  const instances: GatewayProcess[] = [];
  const prefix = uniqueRedisPrefix('rolling');
  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await proxy?.close();
    await upstream?.close();
    await deleteRedisPrefix(prefix);
  });

  it('serves every request while each instance drains, stops and starts again; /health shows draining in between', async () => {
    upstream = await startFakeUpstream();
    const config = writeTempConfig(testConfigObject('http://127.0.0.1:1', { shutdownDelayMs: SHUTDOWN_DELAY_MS }));
    const env = (port: number) => ({
      GATEWAY_CONFIG: config, UPSTREAM_URL: upstream!.url, TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET,
      REDIS_URL: testRedisUrl(), REDIS_PREFIX: prefix, PORT: String(port),
    });
    const ports = [await freePort(), await freePort()];
    for (const port of ports) instances.push(await startGatewayProcess(env(port)));
    proxy = await startRoundRobinProxy(instances.map((instance) => instance.url), { checkIntervalMs: 100 });

    let loading = true;
    const outcomes: string[] = [];
    const load = Promise.all(Array.from({ length: 4 }, async (_, worker) => {
      // Paced, so the load leaves the CPU to the instances starting again.
      for (let i = 0; loading && i < 10_000; i++) {
        outcomes.push(await ask(proxy!.url, (worker + i) % 2 === 0));
        await sleep(20);
      }
    }));
    await sleep(300);
    for (const [index, port] of ports.entries()) {
      expect(await instances[index].stop(), `instance ${index} exit code`).to.equal(0);
      const checksBefore = proxy.health.length;
      instances[index] = await startGatewayProcess(env(port));
      // Back in rotation (a health check of the balancer has seen it serve) before the other one goes, as an
      // operator's rolling restart waits for it; bounded.
      const url = instances[index].url;
      for (let waited = 0; waited < 20_000 && !proxy.health.slice(checksBefore).some((seen) => seen.backend === url && seen.status === 200); waited += 50) await sleep(50);
    }
    loading = false;
    await load;

    expect(proxy.failures, 'requests the balancer could not forward').to.deep.equal([]);
    expect(outcomes.filter((outcome) => outcome !== 'ok'), 'failed requests').to.deep.equal([]);
    expect(outcomes.length).to.be.greaterThan(20);
    for (const instance of instances) {
      expect(proxy.health.some((seen) => seen.backend === instance.url && seen.status === 503 && seen.bodyStatus === 'draining'), `${instance.url} drained`).to.equal(true);
      expect(proxy.forwarded.get(instance.url) ?? 0).to.be.greaterThan(0);
    }
  });
});

/** One request through the balancer, streamed or not: `ok`, or what went wrong. */
async function ask(url: string, stream: boolean): Promise<string> {
  try {
    const response = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { ...Object.fromEntries(nativeHeaders()), 'x-api-key': KEYS.all },
      body: JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 20, stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await response.text();
    if (response.status !== 200) return `status ${response.status}: ${text.slice(0, 200)}`;
    return stream && !text.includes('event: message_stop') ? `stream ended early: ${text.slice(-200)}` : 'ok';
  } catch (err) {
    return `error: ${(err as Error).message} ${String((err as { cause?: unknown }).cause ?? '')}`;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
