/**
 * WEB_CONCURRENCY: the entry point runs N worker processes (node cluster) on one port, so one instance
 * uses every core; without a shared (Redis) store it refuses, since each worker would count limits alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../lib/config';
import { checkClusterConfig, parseWebConcurrency } from '../../lib/server';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS, testConfigObject } from '../helpers/gateway';
import { freePort } from '../helpers/ports';
import { deleteRedisPrefix, testRedisUrl } from '../helpers/redis';

const SERVER = path.resolve(__dirname, '..', '..', 'lib', 'server.js');

function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).once('error', reject);
  });
}

/** Child pids of `pid`, from /proc (Linux). */
function childPids(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
  });
}

describe('WEB_CONCURRENCY', () => {
  it('parses a worker count, 1 when unset, and rejects anything else at start-up', () => {
    expect(parseWebConcurrency(undefined)).to.equal(1);
    expect(parseWebConcurrency('')).to.equal(1);
    expect(parseWebConcurrency('4')).to.equal(4);
    for (const bad of ['0', '-1', '2.5', 'two', '1000']) expect(() => parseWebConcurrency(bad), bad).to.throw(ConfigError, /WEB_CONCURRENCY/);
  });

  it('needs the Redis store and configured keys for more than one worker', () => {
    const withKeys = testConfigObject('http://127.0.0.1:1');
    expect(() => checkClusterConfig(parseConfig(withKeys, { PORT: '0' }))).to.throw(ConfigError, /needs the Redis store/);
    expect(() => checkClusterConfig(parseConfig({ ...withKeys, keys: [] }, { PORT: '0', REDIS_URL: testRedisUrl() }))).to.throw(ConfigError, /needs keys/);
    expect(() => checkClusterConfig(parseConfig(withKeys, { PORT: '0', REDIS_URL: testRedisUrl() }))).not.to.throw();
  });

  describe('the entry point', () => {
    let upstream: FakeUpstream;
    let configFile: string;
    let child: ChildProcess | undefined;
    const redisPrefix = `test-web-concurrency-${process.pid}-${Date.now()}:`;
    before(async () => {
      upstream = await startFakeUpstream();
      configFile = path.join(os.tmpdir(), `gateway-web-concurrency-${process.pid}.json`);
      fs.writeFileSync(configFile, JSON.stringify(testConfigObject(upstream.url)));
    });
    afterEach(async () => {
      if (child && child.exitCode === null) {
        child.kill('SIGKILL');
        await exited(child);
      }
    });
    after(async () => {
      // The workers seeded the test keys under this run's own prefix; remove them.
      await deleteRedisPrefix(redisPrefix);
      fs.rmSync(configFile, { force: true });
      await upstream.close();
    });

    const start = (env: Record<string, string>) => {
      let stderr = '';
      child = spawn(process.execPath, [SERVER], {
        env: { PATH: process.env.PATH, GATEWAY_CONFIG: configFile, LOG_LEVEL: 'error', ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.on('data', (chunk) => (stderr += chunk));
      return { child, stderr: () => stderr };
    };

    it('refuses more than one worker without the Redis store, saying why', async () => {
      const { child: process_, stderr } = start({ WEB_CONCURRENCY: '2', PORT: String(await freePort()) });
      expect(await exited(process_)).to.equal(1);
      expect(stderr()).to.match(/WEB_CONCURRENCY > 1 needs the Redis store \(set REDIS_URL or REDIS_CLUSTER_NODES\)/);
    });

    it('runs N workers on one port that serve requests, and stops them all on SIGTERM', async () => {
      const port = await freePort();
      const { child: primary } = start({
        WEB_CONCURRENCY: '2', PORT: String(port), REDIS_URL: testRedisUrl(), REDIS_PREFIX: redisPrefix,
      });
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = await get(`http://127.0.0.1:${port}/v1/models`, { 'x-api-key': KEYS.all }).then((r) => r.status, () => 0);
      }
      expect(status).to.equal(200);
      const workers = childPids(primary.pid!);
      expect(workers).to.have.length(2);
      primary.kill('SIGTERM');
      expect(await exited(primary)).to.equal(0);
      for (const pid of workers) expect(() => process.kill(pid, 0), `worker ${pid} still running`).to.throw();
    });
  });
});
