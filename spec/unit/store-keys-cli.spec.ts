import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseDuration, runKeysCli } from '../../lib/keys/cli';
import { executeKeysCommand } from '../../lib/keys/key-commands';
import { parseConfig } from '../../lib/config';
import { hashSecret } from '../../lib/keys/secrets';
import { MemoryStore } from '../../lib/store/memory-store';
import { loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import { testConfigObject } from '../helpers/gateway';

describe('key CLI (npm run keys)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cli-'));
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify(testConfigObject('http://127.0.0.1:9', { keys: [] })));
    env = { GATEWAY_CONFIG: config, GATEWAY_STATE_FILE: path.join(dir, 'state.json') };
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function run(...args: string[]) {
    let stdout = '';
    let stderr = '';
    const status = await runKeysCli(args, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env });
    return { status, stdout, stderr, json: () => JSON.parse(stdout) };
  }

  function stored(): MemoryStore {
    const store = new MemoryStore();
    loadMemoryState(store, env.GATEWAY_STATE_FILE!);
    return store;
  }

  it('create shows the secret once and stores only its hash, with the limits given', async () => {
    const created = await run('create', '--id', 'team-a', '--name', 'Team A', '--rate-limit', '30', '--models', 'model-haiku-4.5,model-opus-5', '--cap', '25', '--json');
    expect(created.status, created.stderr).to.equal(0);
    const { secret, key } = created.json();
    expect(secret).to.match(/^sk-cs4-/);
    expect(key).to.deep.include({ id: 'team-a', name: 'Team A', rateLimitPerMinute: 30, monthlyCreditCap: 25, allowedModels: ['model-haiku-4.5', 'model-opus-5'] });
    expect(fs.readFileSync(env.GATEWAY_STATE_FILE!, 'utf8')).not.to.include(secret);
    expect((await stored().findKeyBySecretHash(hashSecret(secret)))!.id).to.equal('team-a');
    const human = await run('create', '--id', 'team-b');
    expect(human.stdout).to.match(/secret \(shown once, store it now\):\n {2}sk-cs4-\S+/);
    expect(human.stdout).to.include('rate limit: 60/min');
  });

  it('list, set-limits, rotate, revoke, restore and usage', async () => {
    const { secret } = (await run('create', '--id', 'team-a', '--json')).json();
    expect((await run('set-limits', 'team-a', '--rate-limit', '5', '--cap', 'none', '--models', 'model-haiku-4.5')).status).to.equal(0);
    expect((await stored().getKey('team-a'))).to.deep.include({ rateLimitPerMinute: 5, monthlyCreditCap: null, allowedModels: ['model-haiku-4.5'] });
    expect((await run('set-limits', 'team-a', '--models', 'all', '--cap', '7.5')).status).to.equal(0);
    expect((await stored().getKey('team-a'))).to.deep.include({ allowedModels: null, monthlyCreditCap: 7.5 });

    const rotated = (await run('rotate', 'team-a', '--grace', '0', '--json')).json();
    expect(rotated.secret).not.to.equal(secret);
    expect(await stored().findKeyBySecretHash(hashSecret(secret))).to.equal(null);
    expect((await stored().findKeyBySecretHash(hashSecret(rotated.secret)))!.id).to.equal('team-a');

    expect((await run('revoke', 'team-a')).stdout).to.include('revoked key team-a');
    expect((await stored().getKey('team-a'))!.revoked).to.equal(true);
    const list = (await run('list', '--json')).json();
    expect(list).to.have.length(1);
    expect(list[0]).to.include({ id: 'team-a', revoked: true, spent: 0 });
    expect((await run('list')).stdout).to.include('REVOKED');
    expect((await run('restore', 'team-a')).status).to.equal(0);
    expect((await stored().getKey('team-a'))!.revoked).to.equal(false);

    const usage = (await run('usage', 'team-a', '--month', '2025-06', '--json')).json();
    expect(usage).to.deep.equal({ id: 'team-a', month: '2025-06', spent: 0, models: [] });
  });

  it('rotate issues the new secret in the key group\'s own prefix', async () => {
    const config = testConfigObject('http://127.0.0.1:9', {
      models: [
        ...(testConfigObject('http://127.0.0.1:9').models as unknown[]),
        { id: 'fam-5', upstreamModel: 'fam-5', pricing: { inputPerMillion: 1, outputPerMillion: 2 } },
      ],
      keyGroups: [{ id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', url: 'http://127.0.0.1:9', apiKeyEnv: 'FAM_KEY' } }],
    });
    fs.writeFileSync(env.GATEWAY_CONFIG!, JSON.stringify(config));
    const seeded = new MemoryStore();
    await seeded.createKey({ id: 'fam-team', secret: { sha256: hashSecret('sk-fam-family-team-key-0001'), expiresAt: null }, last4: '0001', rateLimitPerMinute: 5, allowedModels: null, monthlyCreditCap: null, keyGroup: 'family' });
    saveMemoryState(seeded, env.GATEWAY_STATE_FILE!);
    const rotated = await run('rotate', 'fam-team', '--grace', '0', '--json');
    expect(rotated.status, rotated.stderr).to.equal(0);
    expect(rotated.json().secret).to.match(/^sk-fam-[A-Za-z0-9]{40}$/);
    expect((await stored().findKeyBySecretHash(hashSecret(rotated.json().secret)))!.id).to.equal('fam-team');
  });

  it('refuses to rotate or change the limits of a key config.json declares (exit 1 naming the file); revokes and restores it', async () => {
    const sha = hashSecret('sk-cs4-declared-by-its-hash-0001');
    fs.writeFileSync(env.GATEWAY_CONFIG!, JSON.stringify(testConfigObject('http://127.0.0.1:9', { keys: [{ id: 'filed', keySha256: sha, monthlyCreditCap: 5 }] })));
    for (const args of [['rotate', 'filed'], ['set-limits', 'filed', '--cap', '50'], ['set-limits', 'filed', '--name', 'Other']]) {
      const refused = await run(...args);
      expect(refused.status, args.join(' ')).to.equal(1);
      expect(refused.stderr).to.include('key "filed" is declared in config.json, which sets');
    }
    expect((await run('list', '--json')).json()[0]).to.deep.include({ id: 'filed', monthlyCreditCap: 5, declaredIn: 'config.json', last4: '' });
    const listed = await run('list');
    expect(listed.stdout).to.include('filed  (secret given as its hash)  (declared in config.json)').and.not.include(sha.slice(-4));
    expect((await run('revoke', 'filed')).status).to.equal(0);
    expect(await stored().getKey('filed')).to.deep.include({ revoked: true, revokedAtRunTime: true });
    expect((await run('restore', 'filed')).status).to.equal(0);
    expect(await stored().getKey('filed')).to.deep.include({ revoked: false, revokedAtRunTime: false });
  });

  it('a change made while the audit log cannot be written still succeeds and shows its secret, naming the missing entry', async () => {
    const store = new MemoryStore();
    store.appendAudit = async () => { throw new Error('audit store unreachable'); };
    let stdout = '';
    let stderr = '';
    const io = { stdout: (t: string) => (stdout += t), stderr: (t: string) => (stderr += t), env: {} };
    const config = parseConfig(testConfigObject('http://127.0.0.1:9', { keys: [] }), {});
    const created = await executeKeysCommand(['create', '--id', 'audited', '--json'], store, config, io);
    expect(created).to.deep.include({ status: 0, changed: true });
    expect(JSON.parse(stdout).secret).to.match(/^sk-cs4-/);
    expect(stderr).to.include('key.create of key audited is done, but its audit log entry was not written: audit store unreachable');
    expect((await store.getKey('audited'))?.id).to.equal('audited');
  });

  it('exit status 2 with the usage text for a bad command line, 1 for an unknown key', async () => {
    for (const args of [[], ['frobnicate'], ['create', '--rate-limit', '0'], ['create', '--cap', 'lots'], ['create', '--models', 'model-nope'],
      ['rotate'], ['rotate', 'x', '--grace', 'soon'], ['set-limits', 'x'], ['list', '--month', '2025-13'], ['list', '--bogus']]) {
      const result = await run(...args);
      expect(result.status, args.join(' ')).to.equal(2);
      expect(result.stderr).to.include('usage: npm run keys');
    }
    const missing = await run('revoke', 'nobody');
    expect(missing.status).to.equal(1);
    expect(missing.stderr).to.include('key "nobody" does not exist');
    expect((await run('create', '--id', 'dup')).status).to.equal(0);
    expect((await run('create', '--id', 'dup')).status).to.equal(1);
  });

  const durations: Array<[string, number]> = [['0', 0], ['1500ms', 1500], ['90s', 90_000], ['30m', 1_800_000], ['12h', 43_200_000], ['7d', 604_800_000], ['1.5h', 5_400_000]];
  for (const [text, ms] of durations) {
    it(`reads the grace period "${text}" as ${ms} ms`, () => expect(parseDuration(text)).to.equal(ms));
  }
});
