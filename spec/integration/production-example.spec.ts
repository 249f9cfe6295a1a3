/**
 * docs/production.md, run as written: its config block (upstream pool and keys only, so the shipped
 * catalogue), the fake upstreams started by the command line with the page's flags, two gateway
 * processes on Redis, a round-robin load balancer, and Claude Code (the real `claude` CLI) answered
 * through them, each instance serving at least one of its requests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { claudeEnv, runClaude } from '../helpers/claude-cli';
import { startRefusingProxy } from '../helpers/client-matrix';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../helpers/gateway-process';
import { freePort } from '../helpers/ports';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';
import { startRoundRobinProxy, type RoundRobinProxy } from '../helpers/round-robin-proxy';
import { tempDir } from '../helpers/temp-dir';

const PAGE = path.resolve(__dirname, '..', '..', '..', 'docs', 'production.md');
const FAKE_CLI = path.resolve(__dirname, '..', 'helpers', 'fake-upstream-cli.js');

/** The page's pieces: its config block, the example key, and each `npm run fake-upstream` line's port and flags. */
function readPage(): { config: any; key: string; fakes: Array<{ port: number; flags: string[] }> } {
  const text = fs.readFileSync(PAGE, 'utf8');
  const block = /<!-- production-config -->\n```json\n([\s\S]*?)\n```/.exec(text);
  if (!block) throw new Error('docs/production.md: no config block after <!-- production-config -->');
  const key = /example key `(sk-cs4-[^`]+)`/.exec(text)?.[1];
  if (!key) throw new Error('docs/production.md: no example key');
  const fakes = [...text.matchAll(/^npm run fake-upstream -- (.+)$/gm)].map((line) => {
    const args = line[1].trim().split(/\s+/);
    const port = Number(args[args.indexOf('--port') + 1]);
    return { port, flags: args.filter((_, i) => i !== args.indexOf('--port') && i !== args.indexOf('--port') + 1) };
  });
  return { config: JSON.parse(block[1]), key, fakes };
}

/** Start the fake upstream's command line on `port`; resolves once it listens. */
function startFakeCli(port: number, flags: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [FAKE_CLI, '--port', String(port), ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`fake upstream did not start: ${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`fake upstream exited with ${code}: ${output}`)));
  });
}

describe('docs/production.md as written: Claude Code through two instances on Redis and an upstream pool', function () {
  this.timeout(120_000);
  const prefix = uniqueRedisPrefix('production');
  const fakes: ChildProcess[] = [];
  const instances: GatewayProcess[] = [];
  let balancer: RoundRobinProxy | undefined;
  let refusing: Awaited<ReturnType<typeof startRefusingProxy>> | undefined;
  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    for (const fake of fakes) fake.kill('SIGTERM');
    await balancer?.close();
    await refusing?.close();
    await deleteRedisPrefix(prefix);
  });

  it('serves `claude -p` through the load balancer, both instances answering, on the shipped catalogue', async () => {
    const page = readPage();
    expect(Object.keys(page.config)).to.not.include('models');
    expect(page.fakes).to.have.length(2);
    // The page's ports may be taken on a test machine: the same flags on free ports, the targets moved there.
    const ports = await Promise.all(page.fakes.map(() => freePort()));
    for (const [i, fake] of page.fakes.entries()) fakes.push(await startFakeCli(ports[i], fake.flags));
    page.config.upstream.targets.forEach((target: { url: string }, i: number) => {
      expect(target.url).to.equal(`http://127.0.0.1:${page.fakes[i].port}`);
      target.url = `http://127.0.0.1:${ports[i]}`;
    });
    const receiver = await freePort();
    page.config.alerts.webhookUrl = `http://127.0.0.1:${receiver}/gateway-alerts`;
    const env = {
      GATEWAY_CONFIG: writeTempConfig(page.config), REDIS_URL: testRedisUrl(), REDIS_PREFIX: prefix,
      UPSTREAM_KEY_A: 'fake-credential-a', UPSTREAM_KEY_B: 'fake-credential-b',
      ADMIN_TOKEN: 'production-example-admin-token-0123', METRICS_TOKEN: 'production-example-metrics-token', ALERTS_WEBHOOK_SECRET: 'production-example-alerts-secret',
    };
    for (let i = 0; i < 2; i++) instances.push(await startGatewayProcess({ ...env, PORT: String(await freePort()) }));
    for (const instance of instances) expect(instance.output()).to.include('"models":8');
    balancer = await startRoundRobinProxy(instances.map((instance) => instance.url));
    refusing = await startRefusingProxy();

    const home = tempDir('claude-production-');
    const served = (instance: GatewayProcess) => /"route":"POST \/v1\/messages"[^\n]*"status":200|"status":200[^\n]*"route":"POST \/v1\/messages"/.test(instance.output());
    // Each run sends one or more requests, spread round-robin: a few runs reach both instances.
    for (let run = 0; run < 4 && !instances.every(served); run++) {
      const result = await runClaude(['-p', 'Hello'], home, claudeEnv(home, { ANTHROPIC_BASE_URL: balancer.url, ANTHROPIC_API_KEY: page.key }, refusing.url));
      expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).to.equal(0);
      expect(result.stdout).to.include('Hello, world');
    }
    expect(instances.map(served), 'each instance served a Claude Code request').to.deep.equal([true, true]);
    expect(balancer.failures).to.deep.equal([]);
    expect(refusing.attempts, 'requests to anything but the gateway').to.deep.equal([]);
  });
});
