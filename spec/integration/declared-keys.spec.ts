/**
 * Keys declared in config.json follow the file, and the key CLI reaches the running gateway, on both
 * stores, with gateway processes as a deployment runs them (`node dist/lib/server.js`): a new secret
 * in the file replaces the old one at a restart and at a reload (SIGHUP), `revoked: true` refuses, an
 * edited cap applies on reload; a revocation made through the admin API or the CLI survives restarts
 * whatever the file says; the CLI's change is in the running gateway before it exits, and survives
 * its restart; a CLI that cannot reach the running gateway fails and changes nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { keyChannelPaths } from '../../lib/keys/key-control';
import { admin, ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { testConfigObject, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { runKeysProcess, startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process';
import { eventually } from '../helpers/library';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';
import { tempDir } from '../helpers/temp-dir';

const OLD = 'sk-cs4-declared-process-old-0051';
const NEW = 'sk-cs4-declared-process-new-0052';

for (const kind of ['memory', 'redis'] as const) {
  describe(`keys declared in config.json and the key CLI, on a running gateway (${kind} store)`, function () {
    this.timeout(60_000);
    let upstream: FakeUpstream;
    let dir: string;
    let configFile: string;
    let env: Record<string, string>;
    let running: GatewayProcess | undefined;
    const prefix = uniqueRedisPrefix('declared');

    /** config.json with the key `filed` as given. */
    const declare = (filed: Record<string, unknown>) => {
      fs.writeFileSync(configFile, JSON.stringify(testConfigObject(upstream.url, { keys: [{ id: 'filed', rateLimitPerMinute: 1000, ...filed }] })));
    };
    const start = async () => {
      running = await startGatewayProcess(env);
      return { url: running.url } as TestGateway;
    };
    const stop = async () => {
      await running?.stop();
      running = undefined;
    };
    const keys = (...args: string[]) => runKeysProcess(args, env);

    before(async () => {
      upstream = await startFakeUpstream();
    });
    beforeEach(() => {
      dir = tempDir('gw-declared-');
      configFile = path.join(dir, 'config.json');
      env = {
        GATEWAY_CONFIG: configFile, ADMIN_TOKEN, TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET,
        ...(kind === 'redis' ? { REDIS_URL: testRedisUrl(), REDIS_PREFIX: `${prefix}${Math.random().toString(36).slice(2)}:` } : { GATEWAY_STATE_FILE: path.join(dir, 'state.json') }),
      };
    });
    afterEach(async () => {
      await stop();
      if (env.REDIS_PREFIX) await deleteRedisPrefix(env.REDIS_PREFIX);
      fs.rmSync(dir, { recursive: true, force: true });
    });
    after(async () => upstream.close());

    it('a new secret in the file replaces the old one at the next start (logged); revoked: true in the file refuses', async () => {
      declare({ key: OLD });
      let gw = await start();
      expect(await sendMessage(gw, OLD)).to.equal(200);
      await stop();

      declare({ key: NEW });
      gw = await start();
      expect(await sendMessage(gw, OLD)).to.equal(401);
      expect(await sendMessage(gw, NEW)).to.equal(200);
      expect(running!.output()).to.include('its secret replaced by the file');
      expect(running!.output()).not.to.include(NEW).and.not.to.include(OLD);
      await stop();

      declare({ key: NEW, revoked: true });
      gw = await start();
      expect(await sendMessage(gw, NEW)).to.equal(401);
      expect((await admin(gw, 'GET', '/keys/filed')).body).to.include({ status: 'revoked', declaredIn: 'config.json' });
    });

    it('SIGHUP applies an edited cap and a new secret at once; the admin API refuses to change what the file sets (409)', async () => {
      declare({ key: OLD, monthlyCreditCap: 1000 });
      const gw = await start();
      expect(await sendMessage(gw, OLD)).to.equal(200);
      expectConflict(await admin(gw, 'PATCH', '/keys/filed', { monthlyCreditCap: 5000 }));
      expectConflict(await admin(gw, 'POST', '/keys/filed/rotate', {}));

      declare({ key: OLD, monthlyCreditCap: 0 });
      running!.child.kill('SIGHUP');
      await eventually(() => running!.output().includes('"field":"monthlyCreditCap"'), 10_000);
      expect(await sendMessage(gw, OLD)).to.equal(402);
      expect((await admin(gw, 'GET', '/keys/filed')).body.monthlyCreditCap).to.equal(0);

      declare({ key: NEW });
      running!.child.kill('SIGHUP');
      await eventually(() => running!.output().includes('its secret replaced by the file'), 10_000);
      expect(await sendMessage(gw, NEW)).to.equal(200);
      expect(await sendMessage(gw, OLD)).to.equal(401);
    });

    it('a key revoked through the admin API stays refused after a restart whatever the file says, until a restore (logged)', async () => {
      declare({ key: OLD });
      let gw = await start();
      expect((await admin(gw, 'POST', '/keys/filed/revoke', {})).status).to.equal(200);
      expect(await sendMessage(gw, OLD)).to.equal(401);
      await stop();

      declare({ key: OLD, revoked: false });
      gw = await start();
      expect(await sendMessage(gw, OLD)).to.equal(401);
      expect((await admin(gw, 'POST', '/keys/filed/restore', {})).status).to.equal(200);
      expect(await sendMessage(gw, OLD)).to.equal(200);
      expect(running!.output()).to.match(/"action":"key\.restore"[^\n]*"key_id":"filed"|"key_id":"filed"[^\n]*"action":"key\.restore"/);
    });

    it('npm run keys -- revoke against the running gateway refuses the key within a second, and after a restart', async () => {
      declare({ key: OLD });
      let gw = await start();
      const created = await keys('create', '--id', 'cli-made', '--json');
      expect(created.status, created.stderr).to.equal(0);
      const { secret } = JSON.parse(created.stdout);
      expect(await sendMessage(gw, secret)).to.equal(200);

      for (const id of ['cli-made', 'filed']) {
        const revoked = await keys('revoke', id);
        // The gateway answered the CLI once the change was in its store: the very next request is refused.
        const exited = Date.now();
        expect(revoked.status, revoked.stderr).to.equal(0);
        expect(revoked.stdout).to.include(`revoked key ${id}`);
        expect(await sendMessage(gw, id === 'filed' ? OLD : secret)).to.equal(401);
        expect(Date.now() - exited).to.be.below(1000);
      }
      const refused = await keys('set-limits', 'filed', '--cap', '5');
      expect(refused.status).to.equal(1);
      expect(refused.stderr).to.include('declared in config.json');
      await stop();

      gw = await start();
      expect(await sendMessage(gw, secret)).to.equal(401);
      expect(await sendMessage(gw, OLD)).to.equal(401);
      expect((await keys('list', '--json')).stdout).to.include('"revokedAtRunTime": true');
    });

    if (kind === 'memory') {
      it('a CLI that cannot reach the running gateway exits 1 and changes nothing; with none running, it edits the state file', async () => {
        declare({ key: OLD });
        let gw = await start();
        fs.rmSync(keyChannelPaths(env.GATEWAY_STATE_FILE).socket);
        const failed = await keys('revoke', 'filed');
        expect(failed.status).to.equal(1);
        expect(failed.stderr).to.match(/a gateway \(pid \d+\) is running on .*state\.json, and its key channel failed: .*nothing changed/);
        expect(await sendMessage(gw, OLD)).to.equal(200);
        await stop();

        const offline = await keys('revoke', 'filed');
        expect(offline.status, offline.stderr).to.equal(0);
        expect(offline.stderr).to.include('no gateway is running');
        gw = await start();
        expect(await sendMessage(gw, OLD)).to.equal(401);
      });
    }
  });
}

/** A 409 naming config.json. */
function expectConflict(reply: { status: number; body: any }): void {
  expect(reply.status, JSON.stringify(reply.body)).to.equal(409);
  expect(reply.body.error.message).to.include('declared in config.json');
}

