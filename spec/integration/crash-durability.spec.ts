/**
 * The memory store survives a crash: a gateway process (`node dist/lib/server.js`) is killed with
 * SIGKILL right after keys were created and revoked through the admin API and some spend settled;
 * restarted on the same state file, the created key works, the revoked one is refused and the spend
 * is there (written within MEMORY_FLUSH_INTERVAL_MS of settling, docs/operations.md).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { admin, ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { testConfigObject, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../helpers/gateway-process';
import { tempDir } from '../helpers/temp-dir';

/** Resolves once `check` holds for the state file's text (polled; the test's own timeout bounds it). */
async function stateFileShows(file: string, check: (text: string) => boolean): Promise<void> {
  for (;;) {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    if (check(text)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('memory store: a kill -9 loses no key change and at most the flush window of spend', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let dir: string;
  let running: GatewayProcess | undefined;
  before(async () => {
    upstream = await startFakeUpstream();
    dir = tempDir('gw-crash-');
  });
  after(async () => {
    await running?.stop();
    await upstream.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps created and revoked keys and the settled spend across SIGKILL', async () => {
    const stateFile = path.join(dir, 'state.json');
    const env = {
      GATEWAY_CONFIG: writeTempConfig(testConfigObject(upstream.url)), GATEWAY_STATE_FILE: stateFile,
      TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET, ADMIN_TOKEN,
    };
    running = await startGatewayProcess(env);
    const first = { url: running.url } as TestGateway;
    const kept = (await admin(first, 'POST', '/keys', { id: 'kept', name: 'Kept' })).body.secret as string;
    const revoked = (await admin(first, 'POST', '/keys', { id: 'gone', name: 'Gone' })).body.secret as string;
    expect(await sendMessage(first, revoked)).to.equal(200);
    expect((await admin(first, 'POST', '/keys/gone/revoke', {})).status).to.equal(200);
    // The revocation was on disk before the admin call answered.
    expect(JSON.parse(fs.readFileSync(stateFile, 'utf8')).keys.find((stored: any) => stored.record.id === 'gone').record.revoked).to.equal(true);
    expect(await sendMessage(first, kept)).to.equal(200);
    const spentBefore = (await admin(first, 'GET', '/keys/kept/usage')).body;
    expect(spentBefore.models).to.have.length(1);
    await stateFileShows(stateFile, (text) => text.includes('"kept|'));

    running.child.kill('SIGKILL');
    await running.stop();
    running = await startGatewayProcess(env);
    const second = { url: running.url } as TestGateway;
    expect(await sendMessage(second, kept)).to.equal(200);
    expect(await sendMessage(second, revoked)).to.equal(401);
    const spentAfter = (await admin(second, 'GET', '/keys/kept/usage')).body;
    expect(spentAfter.models[0].requests).to.equal(spentBefore.models[0].requests + 1);
    expect(spentAfter.models[0].credits).to.be.greaterThan(spentBefore.models[0].credits);
  });
});
