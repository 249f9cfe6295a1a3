/**
 * The audit log end to end on the memory store (a gateway in this process, its state file and key
 * channel): every means of change records its actor (the admin API `admin-token` with the caller's
 * address, the key CLI `cli` through the running gateway and on the file directly, config.json
 * `config` at start and reload), no entry holds a secret, `GET /admin/v1/audit` filters, pages and
 * exports JSON lines, and `GET /admin/v1/audit/verify` finds an entry edited in the store.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../lib/config';
import { runKeysCli } from '../../lib/keys/cli';
import { hashSecret } from '../../lib/keys/secrets';
import { startGateway, type RunningGateway } from '../../lib/server';
import { MemoryStore } from '../../lib/store/memory-store';
import { loadMemoryState } from '../../lib/store/memory-persistence';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createCapturingLogger, testConfigObject, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { tempDir } from '../helpers/temp-dir';

/** A GET of the admin API answering text (JSON lines), with extra headers. */
async function adminText(gateway: { url: string }, pathAndQuery: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.url}/admin/v1${pathAndQuery}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers } });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

describe('audit log on the memory store (admin API, key CLI, config.json)', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let dir: string;
  let env: Record<string, string>;
  let running: RunningGateway;
  let gw: TestGateway;
  /** The keys section of the config file, changed by the reload test. */
  const writeConfig = (overrides: Record<string, unknown> = {}) => {
    fs.writeFileSync(env.GATEWAY_CONFIG, JSON.stringify(testConfigObject(upstream.url, overrides)));
  };
  const cli = async (...argv: string[]) => {
    const out = { stdout: '', stderr: '' };
    const status = await runKeysCli(argv, { stdout: (t) => (out.stdout += t), stderr: (t) => (out.stderr += t), env });
    return { status, ...out };
  };

  before(async () => {
    upstream = await startFakeUpstream();
    process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
    dir = tempDir('gw-audit-');
    env = { GATEWAY_CONFIG: path.join(dir, 'config.json'), GATEWAY_STATE_FILE: path.join(dir, 'state.json'), ADMIN_TOKEN, PORT: '0' };
    writeConfig();
    const { logger } = createCapturingLogger();
    running = await startGateway({
      config: loadConfig(undefined, env), loadConfig: () => loadConfig(undefined, env), logger, host: '127.0.0.1', stateFile: env.GATEWAY_STATE_FILE, requestScope: false, tracingEnv: {},
    });
    gw = { url: running.url } as TestGateway;
  });

  after(async () => {
    await running?.close();
    await upstream?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('records config.json\'s declared keys at start with actor config', async () => {
    const { body } = await admin(gw, 'GET', '/audit?actor=config&action=key.create');
    expect(body.data.map((e: any) => e.object.id)).to.deep.equal(['team-all', 'team-haiku', 'team-revoked']);
    expect(body.data[0]).to.deep.include({ actor: 'config', ip: null, id: 1 });
    expect(body.cursor).to.equal(null);
  });

  it('records each admin API change with actor admin-token, the caller\'s address and the changed fields; never a secret', async () => {
    const created = await admin(gw, 'POST', '/keys', { name: 'Audited', monthlyCreditCap: 9 });
    const id = created.body.key.id;
    await admin(gw, 'PATCH', `/keys/${id}`, { rateLimitPerMinute: 3, name: 'Audited' });
    const rotated = await admin(gw, 'POST', `/keys/${id}/rotate`, { gracePeriodSeconds: 60 });
    await admin(gw, 'POST', `/keys/${id}/revoke`);
    await admin(gw, 'POST', `/keys/${id}/revoke`);
    await admin(gw, 'POST', `/keys/${id}/restore`);
    await admin(gw, 'PATCH', `/keys/${id}`, { rateLimitPerMinute: 'x' });
    const { status, body } = await admin(gw, 'GET', `/audit?objectType=key&objectId=${id}`);
    expect(status).to.equal(200);
    const entries = body.data;
    expect(entries.map((e: any) => e.action)).to.deep.equal(['key.create', 'key.update', 'key.rotate', 'key.revoke', 'key.restore']);
    for (const entry of entries) {
      expect(entry.actor).to.equal('admin-token');
      expect(entry.ip).to.match(/127\.0\.0\.1$/);
      expect(entry.object).to.deep.equal({ type: 'key', id });
      expect(entry.hash).to.match(/^[0-9a-f]{64}$/);
      expect(Date.parse(entry.at)).to.be.closeTo(Date.now(), 60_000);
    }
    expect(entries[0].after).to.deep.include({ name: 'Audited', monthlyCreditCap: 9, keyGroup: 'default' });
    expect(entries[0].before).to.equal(null);
    // Changed fields only: the unchanged name is not there.
    expect(entries[1]).to.deep.include({ before: { rateLimitPerMinute: running.gateway.config.defaults.rateLimitPerMinute }, after: { rateLimitPerMinute: 3 } });
    expect(entries[2].after).to.deep.equal({ gracePeriodSeconds: 60 });
    expect(entries[3]).to.deep.include({ before: { revoked: false }, after: { revoked: true } });
    expect(entries[4]).to.deep.include({ before: { revoked: true }, after: { revoked: false } });
    const everything = (await adminText(gw, '/audit?format=jsonl')).text;
    for (const secret of [created.body.secret, rotated.body.secret]) {
      expect(everything).not.to.include(secret);
      expect(everything).not.to.include(hashSecret(secret));
    }
    expect(everything).not.to.include('last4').and.not.to.include(ADMIN_TOKEN);
  });

  it('records the key CLI with actor cli, run in the gateway that owns the state file', async () => {
    const made = await cli('create', '--name', 'made-by-cli', '--cap', '4', '--json');
    expect(made.status, made.stderr).to.equal(0);
    const { id } = JSON.parse(made.stdout).key;
    expect((await cli('set-limits', id, '--cap', '6')).status).to.equal(0);
    expect((await cli('rotate', id, '--grace', '0')).status).to.equal(0);
    expect((await cli('revoke', id)).status).to.equal(0);
    const { body } = await admin(gw, 'GET', `/audit?actor=cli&objectId=${id}`);
    expect(body.data.map((e: any) => [e.actor, e.action, e.ip])).to.deep.equal([
      ['cli', 'key.create', null], ['cli', 'key.update', null], ['cli', 'key.rotate', null], ['cli', 'key.revoke', null],
    ]);
    expect(body.data[1]).to.deep.include({ before: { monthlyCreditCap: 4 }, after: { monthlyCreditCap: 6 } });
    expect(JSON.stringify(body)).not.to.include(JSON.parse(made.stdout).secret);
  });

  it('records a reload: the declared keys it changed and config.reload naming the fields, actor config', async () => {
    writeConfig({ keys: [
      { id: 'team-all', key: 'sk-cs4-test-all-models-0001', rateLimitPerMinute: 100000 },
      { id: 'team-haiku', key: 'sk-cs4-test-haiku-only-0002', allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100000, monthlyCreditCap: 5 },
      { id: 'team-revoked', key: 'sk-cs4-test-revoked-key-0003', revoked: true },
    ] });
    expect((await running.gateway.reload()).ok).to.equal(true);
    const { body } = await admin(gw, 'GET', '/audit?actor=config&since=2000-01-01');
    const [update, reload] = body.data.slice(-2);
    expect(update).to.deep.include({ action: 'key.update', object: { type: 'key', id: 'team-haiku' }, before: { monthlyCreditCap: null }, after: { monthlyCreditCap: 5 } });
    expect(reload).to.deep.include({ action: 'config.reload', object: { type: 'config', id: 'config.json' } });
    expect(reload.after.reloaded).to.include('keys');
  });

  it('filters by action, time and page (cursor), and exports JSON lines by format or Accept header', async () => {
    const all = (await admin(gw, 'GET', '/audit?limit=1000')).body.data;
    expect(all.map((e: any) => e.id)).to.deep.equal(all.map((_e: unknown, i: number) => i + 1));
    const first = await admin(gw, 'GET', '/audit?limit=2');
    expect(first.body.data.map((e: any) => e.id)).to.deep.equal([1, 2]);
    const second = await admin(gw, 'GET', `/audit?limit=2&cursor=${first.body.cursor}`);
    expect(second.body.data.map((e: any) => e.id)).to.deep.equal([3, 4]);
    expect((await admin(gw, 'GET', '/audit?action=key.rotate')).body.data.map((e: any) => e.actor)).to.deep.equal(['admin-token', 'cli']);
    expect((await admin(gw, 'GET', '/audit?until=2000-01-01')).body.data).to.deep.equal([]);
    expect((await admin(gw, 'GET', `/audit?since=${encodeURIComponent(all[3].at)}`)).body.data[0].id).to.equal(4);

    const lines = await adminText(gw, '/audit?format=jsonl&actor=cli');
    expect(lines.status).to.equal(200);
    expect(lines.type).to.match(/^application\/x-ndjson/);
    expect(lines.text.trimEnd().split('\n').map((line) => JSON.parse(line).action)).to.deep.equal(['key.create', 'key.update', 'key.rotate', 'key.revoke']);
    const accepted = await adminText(gw, '/audit?limit=3', { accept: 'application/x-ndjson' });
    expect(accepted.text.trimEnd().split('\n').map((line) => JSON.parse(line).id)).to.deep.equal([1, 2, 3]);
  });

  it('refuses bad filters with a 400 naming the parameter, and callers without the token with a 401', async () => {
    for (const [query, named] of [['?since=yesterday', 'since'], ['?limit=0', 'limit'], ['?limit=1001', 'limit'], ['?cursor=-1', 'cursor'],
      ['?format=xml', 'format'], ['?actor=a&actor=b', 'actor'], ['?who=me', 'who']]) {
      const { status, body } = await admin(gw, 'GET', `/audit${query}`);
      expect(status, query).to.equal(400);
      expect(body.error.message, query).to.include(named);
    }
    expect((await admin(gw, 'GET', '/audit', undefined, null)).status).to.equal(401);
    expect((await admin(gw, 'GET', '/audit/verify', undefined, 'wrong-token')).status).to.equal(401);
  });

  it('verify reports the chain intact, then the first entry edited in the store', async () => {
    const intact = await admin(gw, 'GET', '/audit/verify');
    expect(intact.status).to.equal(200);
    expect(intact.body).to.deep.include({ intact: true });
    expect(intact.body.entries).to.be.greaterThan(10);
    const store = running.store as MemoryStore;
    const snapshot = JSON.parse(JSON.stringify(store.snapshot())) as ReturnType<MemoryStore['snapshot']>;
    snapshot.audit!.entries[4].actor = 'cli';
    store.restore(snapshot);
    const broken = await admin(gw, 'GET', '/audit/verify');
    expect(broken.body).to.deep.include({ intact: false, firstBrokenId: 5 });
    snapshot.audit!.entries[4].actor = 'admin-token';
    store.restore(snapshot);
    expect((await admin(gw, 'GET', '/audit/verify')).body.intact).to.equal(true);
  });

  it('the key CLI on the state file with no gateway running records actor cli there', async () => {
    const alone = tempDir('gw-audit-cli-');
    const aloneEnv = { ...env, GATEWAY_STATE_FILE: path.join(alone, 'state.json') };
    const out = { stdout: '', stderr: '' };
    const status = await runKeysCli(['create', '--id', 'offline', '--json'], { stdout: (t) => (out.stdout += t), stderr: (t) => (out.stderr += t), env: aloneEnv });
    expect(status, out.stderr).to.equal(0);
    const store = new MemoryStore();
    expect(loadMemoryState(store, aloneEnv.GATEWAY_STATE_FILE)).to.equal(true);
    const entries = await store.readAudit(0, 100);
    expect(entries.filter((e) => e.actor === 'config').map((e) => e.object?.id)).to.deep.equal(['team-all', 'team-haiku', 'team-revoked']);
    expect(entries[entries.length - 1]).to.deep.include({ actor: 'cli', action: 'key.create', object: { type: 'key', id: 'offline' } });
    expect(JSON.stringify(entries)).not.to.include(JSON.parse(out.stdout).secret);
    fs.rmSync(alone, { recursive: true, force: true });
  });
});
