/**
 * The suite's own Redis (spec/setup.ts): the tests use a disposable redis-server or the one TEST_REDIS_URL
 * names, never the user's Redis on the default port or at REDIS_URL; without redis-server or chromium
 * the run stops at once, naming the Debian package.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createClient } from 'redis';
import { testRedisUrl } from '../helpers/redis';
import { findMissingNeed, givenTestRedisUrl, suiteRedis } from '../setup';

const SETUP = path.resolve(__dirname, '..', 'setup.js');

describe("the suite's Redis (spec/setup.ts)", () => {
  it('is a disposable server on a loopback port other than 6379, unless TEST_REDIS_URL names one', async () => {
    const url = new URL(testRedisUrl());
    if (suiteRedis.disposable) {
      expect(url.hostname).to.equal('127.0.0.1');
      expect(url.port).to.not.equal('6379').and.not.equal('');
    } else {
      expect(testRedisUrl()).to.equal(suiteRedis.url);
    }
    const client = createClient({ url: testRedisUrl() });
    await client.connect();
    try {
      expect(await client.ping()).to.equal('PONG');
    } finally {
      await client.close();
    }
  });

  it('takes TEST_REDIS_URL when set and never REDIS_URL (which it removes from the environment of the run)', () => {
    expect(givenTestRedisUrl({ TEST_REDIS_URL: 'redis://127.0.0.1:7001' })).to.equal('redis://127.0.0.1:7001');
    expect(givenTestRedisUrl({ REDIS_URL: 'redis://127.0.0.1:6379' })).to.equal(null);
    expect(givenTestRedisUrl({})).to.equal(null);
    expect(process.env.REDIS_URL).to.equal(undefined);
  });

  it('names the Debian package of a missing redis-server or chromium', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'suite-needs-'));
    try {
      const chromium = path.join(dir, 'chromium');
      expect(findMissingNeed({ PATH: dir }, chromium)).to.equal('npm test needs redis-server (it starts one of its own): apt-get install redis-server');
      const redisServer = path.join(dir, 'redis-server');
      fs.writeFileSync(redisServer, '');
      fs.chmodSync(redisServer, 0o755);
      expect(findMissingNeed({ PATH: dir }, chromium)).to.equal(`npm test needs chromium at ${chromium} (the dashboard test): apt-get install chromium`);
      // A Redis given by TEST_REDIS_URL needs no redis-server.
      expect(findMissingNeed({ PATH: '', TEST_REDIS_URL: 'redis://127.0.0.1:7001' }, chromium)).to.match(/apt-get install chromium$/);
      fs.writeFileSync(chromium, '');
      expect(findMissingNeed({ PATH: dir }, chromium)).to.equal(null);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops a run at once, with that one line, when redis-server is not installed', () => {
    const result = spawnSync(process.execPath, [SETUP], { env: { PATH: '/nonexistent' }, encoding: 'utf8', timeout: 10_000 });
    expect(result.status).to.equal(1);
    expect(result.stderr).to.equal('npm test needs redis-server (it starts one of its own): apt-get install redis-server\n');
  });

  it('needs neither redis-server nor chromium in the unit run (npm run test:unit loads spec/unit-scope.ts first)', () => {
    expect(findMissingNeed({ PATH: '', GATEWAY_TEST_SCOPE: 'unit' }, '/nonexistent/chromium')).to.equal(null);
    const unitScope = path.resolve(__dirname, '..', 'unit-scope.js');
    const result = spawnSync(process.execPath, ['--require', unitScope, SETUP], { env: { PATH: '/nonexistent' }, encoding: 'utf8', timeout: 10_000 });
    expect(result.stderr).to.equal('');
    expect(result.status).to.equal(0);
  });
});
