import { expect } from 'chai';
import { admin, ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { MemoryStore } from '../../lib/store/memory-store';

function expectAdminError(reply: { status: number; body: any }, status: number, type: string, message: RegExp) {
  expect(reply.status, JSON.stringify(reply.body)).to.equal(status);
  expect(reply.body.type).to.equal('error');
  expect(reply.body.error.type).to.equal(type);
  expect(reply.body.error.message).to.match(message);
  expect(reply.body.request_id).to.match(/^req_/);
}

describe('admin API', () => {
  let gateway: TestGateway;
  beforeEach(async () => {
    gateway = await startTestGateway({ env: { ADMIN_TOKEN } });
  });
  afterEach(async () => {
    await gateway.close();
  });

  describe('auth', () => {
    it('refuses a missing, wrong, or API-key token with 401 on every route', async () => {
      const routes: Array<[string, string, unknown?]> = [
        ['GET', '/keys'], ['POST', '/keys', { name: 'x' }], ['GET', '/keys/team-all'], ['PATCH', '/keys/team-all', { name: 'x' }],
        ['POST', '/keys/team-all/rotate', {}], ['POST', '/keys/team-all/revoke', {}], ['GET', '/keys/team-all/usage'], ['GET', '/models'],
        ['GET', '/no-such-route'],
      ];
      for (const [method, path, body] of routes) {
        expectAdminError(await admin(gateway, method, path, body, null), 401, 'authentication_error', /missing admin token/);
        expectAdminError(await admin(gateway, method, path, body, `${ADMIN_TOKEN}x`), 401, 'authentication_error', /invalid admin token/);
        expectAdminError(await admin(gateway, method, path, body, KEYS.all), 401, 'authentication_error', /invalid admin token/);
      }
      // Nothing was changed by the refused calls.
      expect((await admin(gateway, 'GET', '/keys/team-all')).body).to.include({ name: 'team-all', status: 'active' });
      expect((await admin(gateway, 'GET', '/keys')).body.data).to.have.length(3);
    });

    it('answers 429 with retry-after after 50 refused requests in a minute from one address', async () => {
      for (let i = 0; i < 50; i++) expect((await admin(gateway, 'GET', '/keys', undefined, `guess-${i}-0123456789abcdef`)).status).to.equal(401);
      const limited = await admin(gateway, 'GET', '/keys', undefined, 'one-more-guess-0123456789');
      expectAdminError(limited, 429, 'rate_limit_error', /too many refused admin requests from this address; retry in \d+ s/);
      expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
      // The operator behind the same address is not locked out.
      expect((await admin(gateway, 'GET', '/keys')).status).to.equal(200);
    });

    it('does not count accepted admin requests towards the refused-request limit', async () => {
      for (let i = 0; i < 60; i++) expect((await admin(gateway, 'GET', '/models')).status).to.equal(200);
      expect((await admin(gateway, 'GET', '/keys', undefined, 'a-wrong-token-0123456789')).status).to.equal(401);
    });

    it('does not read x-api-key, even with the admin token in it', async () => {
      const response = await fetch(`${gateway.url}/admin/v1/keys`, { headers: { 'x-api-key': ADMIN_TOKEN } });
      expect(response.status).to.equal(401);
    });

    it('sends no-store on every admin reply', async () => {
      expect((await admin(gateway, 'GET', '/keys')).headers.get('cache-control')).to.equal('no-store');
      expect((await admin(gateway, 'GET', '/keys', undefined, null)).headers.get('cache-control')).to.equal('no-store');
    });
  });

  it('GET /keys lists every key with status, limits and this month\'s spend, never a secret', async () => {
    const reply = await admin(gateway, 'GET', '/keys');
    expect(reply.status).to.equal(200);
    expect(reply.body.month).to.match(/^\d{4}-\d{2}$/);
    expect(reply.body.monthResetsAt).to.match(/-01T00:00:00.000Z$/);
    const byId = Object.fromEntries(reply.body.data.map((key: any) => [key.id, key]));
    expect(byId['team-haiku']).to.deep.include({
      name: 'team-haiku', last4: KEYS.haikuOnly.slice(-4), status: 'active', rateLimitPerMinute: 100000,
      allowedModels: ['model-haiku-4.5'], monthlyCreditCap: null, spend: { month: reply.body.month, credits: 0 },
    });
    expect(byId['team-revoked'].status).to.equal('revoked');
    const text = JSON.stringify(reply.body);
    for (const secret of Object.values(KEYS)) expect(text).not.to.include(secret);
    expect(text).not.to.match(/sha256|[0-9a-f]{64}/);
  });

  it('POST /keys creates a key whose secret is returned once and works at once', async () => {
    const created = await admin(gateway, 'POST', '/keys', { name: 'Search team', rateLimitPerMinute: 20, monthlyCreditCap: 50, allowedModels: ['model-haiku-4.5'] });
    expect(created.status).to.equal(201);
    const { key, secret } = created.body;
    expect(secret).to.match(/^sk-cs4-[A-Za-z0-9]{40}$/);
    expect(key).to.deep.include({ name: 'Search team', last4: secret.slice(-4), status: 'active', rateLimitPerMinute: 20, monthlyCreditCap: 50, allowedModels: ['model-haiku-4.5'] });
    expect(key.id).to.match(/^key_[A-Za-z0-9]{12}$/);
    expect(await sendMessage(gateway, secret, 'model-haiku-4.5')).to.equal(200);
    expect(await sendMessage(gateway, secret, 'model-sonnet-4.6')).to.equal(403);
    // Shown once: reading the key again never returns the secret.
    expect(JSON.stringify((await admin(gateway, 'GET', `/keys/${key.id}`)).body)).not.to.include(secret);
    expect(JSON.stringify((await admin(gateway, 'GET', '/keys')).body)).not.to.include(secret);
  });

  it('POST /keys takes a chosen id and defaults the rate limit; a taken id is 409', async () => {
    const created = await admin(gateway, 'POST', '/keys', { id: 'ops.batch-1', name: 'Batch' });
    expect(created.status).to.equal(201);
    expect(created.body.key).to.deep.include({ id: 'ops.batch-1', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null });
    expectAdminError(await admin(gateway, 'POST', '/keys', { id: 'ops.batch-1', name: 'Again' }), 409, 'invalid_request_error', /already exists/);
    expectAdminError(await admin(gateway, 'POST', '/keys', { id: 'team-all', name: 'Again' }), 409, 'invalid_request_error', /already exists/);
  });

  describe('bad bodies', () => {
    it('are 400 (or 415) in the one error shape, naming the problem', async () => {
      expectAdminError(await admin(gateway, 'POST', '/keys', '{"name": '), 400, 'invalid_request_error', /not valid JSON/);
      expectAdminError(await admin(gateway, 'POST', '/keys', '[]'), 400, 'invalid_request_error', /must be a JSON object/);
      expectAdminError(await admin(gateway, 'POST', '/keys'), 400, 'invalid_request_error', /must be a JSON object/);
      expectAdminError(await admin(gateway, 'POST', '/keys', { name: 'x', allowedModels: ['opus'] }), 400, 'invalid_request_error', /allowedModels: "opus" is not a catalogue model id/);
      expectAdminError(await admin(gateway, 'POST', '/keys', { name: 'x', rateLimitPerMinute: 'fast' }), 400, 'invalid_request_error', /rateLimitPerMinute: must be integer/);
      expectAdminError(await admin(gateway, 'PATCH', '/keys/team-all', {}), 400, 'invalid_request_error', /at least one field/);
      expectAdminError(await admin(gateway, 'PATCH', '/keys/team-all', { revoked: false }), 400, 'invalid_request_error', /unknown field "revoked"/);
      expectAdminError(await admin(gateway, 'POST', '/keys/team-all/rotate', { gracePeriodSeconds: 'a day' }), 400, 'invalid_request_error', /gracePeriodSeconds: must be integer/);
      expectAdminError(await admin(gateway, 'POST', '/keys/team-all/revoke', { now: true }), 400, 'invalid_request_error', /unknown field "now"/);
      const wrongType = await fetch(`${gateway.url}/admin/v1/keys`, {
        method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/plain' }, body: 'name=x',
      });
      expectAdminError({ status: wrongType.status, body: await wrongType.json() }, 415, 'invalid_request_error', /content-type: application\/json/);
      const tooLarge = await admin(gateway, 'POST', '/keys', { name: 'x'.repeat(70 * 1024) });
      expectAdminError(tooLarge, 413, 'request_too_large', /larger than the limit of 65536 bytes/);
      // Nothing was created or changed.
      expect((await admin(gateway, 'GET', '/keys')).body.data).to.have.length(3);
      expect((await admin(gateway, 'GET', '/keys/team-all')).body.status).to.equal('active');
    });

    it('unknown keys and routes are 404; a bad month is 400', async () => {
      for (const [method, path, body] of [['GET', '/keys/nope'], ['PATCH', '/keys/nope', { name: 'x' }], ['POST', '/keys/nope/rotate'], ['POST', '/keys/nope/revoke'], ['GET', '/keys/nope/usage']] as const) {
        expectAdminError(await admin(gateway, method, path, body), 404, 'not_found_error', /no key with id "nope"/);
      }
      expectAdminError(await admin(gateway, 'DELETE', '/keys/team-all'), 404, 'not_found_error', /no admin route for DELETE \/admin\/v1\/keys\/team-all/);
      expectAdminError(await admin(gateway, 'GET', '/keys/team-all/usage?month=2025-13'), 400, 'invalid_request_error', /month: must be a UTC calendar month written YYYY-MM/);
      expectAdminError(await admin(gateway, 'GET', '/keys/team-all/usage?month=2025-01&month=2025-02'), 400, 'invalid_request_error', /month:/);
    });
  });

  it('PATCH /keys/:id changes limits, effective on the next API request', async () => {
    const made = (await admin(gateway, 'POST', '/keys', { id: 'made', name: 'Made', rateLimitPerMinute: 1000 })).body.secret as string;
    expect(await sendMessage(gateway, made, 'model-sonnet-4.6')).to.equal(200);
    const patched = await admin(gateway, 'PATCH', '/keys/made', { name: 'Everything team', allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 7, monthlyCreditCap: 3 });
    expect(patched.status).to.equal(200);
    expect(patched.body).to.deep.include({ id: 'made', name: 'Everything team', allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 7, monthlyCreditCap: 3, declaredIn: null });
    expect(await sendMessage(gateway, made, 'model-sonnet-4.6')).to.equal(403);
    expect(await sendMessage(gateway, made, 'haiku')).to.equal(200);
    const cleared = await admin(gateway, 'PATCH', '/keys/made', { allowedModels: null, monthlyCreditCap: null });
    expect(cleared.body).to.deep.include({ allowedModels: null, monthlyCreditCap: null, rateLimitPerMinute: 7, name: 'Everything team' });
    expect(await sendMessage(gateway, made, 'model-sonnet-4.6')).to.equal(200);
  });

  it('refuses with 409 naming config.json to change what the file sets on a key it declares; its alert thresholds may change', async () => {
    expect((await admin(gateway, 'GET', '/keys/team-all')).body).to.include({ declaredIn: 'config.json', last4: KEYS.all.slice(-4) });
    for (const body of [{ name: 'x' }, { rateLimitPerMinute: 1 }, { allowedModels: ['model-haiku-4.5'] }, { monthlyCreditCap: 0 }]) {
      expectAdminError(await admin(gateway, 'PATCH', '/keys/team-all', body), 409, 'invalid_request_error', /declared in config\.json, which sets/);
    }
    expectAdminError(await admin(gateway, 'POST', '/keys/team-all/rotate', {}), 409, 'invalid_request_error', /declared in config\.json, which sets its secret/);
    expect((await admin(gateway, 'GET', '/keys/team-all')).body).to.deep.include({ name: 'team-all', rateLimitPerMinute: 100000, allowedModels: null });
    expect(await sendMessage(gateway, KEYS.all)).to.equal(200);
    expect((await admin(gateway, 'PATCH', '/keys/team-all', { alertThresholds: [90] })).body.alertThresholds).to.deep.equal([90]);
  });

  it('POST /keys/:id/rotate issues a new secret; the old one works for the grace period only', async () => {
    const made = (await admin(gateway, 'POST', '/keys', { id: 'made', name: 'Made', rateLimitPerMinute: 100000 })).body.secret as string;
    const rotated = await admin(gateway, 'POST', '/keys/made/rotate', { gracePeriodSeconds: 3600 });
    expect(rotated.status).to.equal(200);
    const { secret, key, previousSecretExpiresAt } = rotated.body;
    expect(secret).to.match(/^sk-cs4-/).and.not.equal(made);
    expect(key).to.deep.include({ id: 'made', last4: secret.slice(-4), rateLimitPerMinute: 100000 });
    const graceEnds = Date.parse(previousSecretExpiresAt) - Date.now();
    expect(graceEnds).to.be.greaterThan(3500_000).and.at.most(3600_000);
    expect(await sendMessage(gateway, secret)).to.equal(200);
    expect(await sendMessage(gateway, made)).to.equal(200);

    // No grace: the previous secret (the one just issued) stops at once; the default is 24 h.
    const again = await admin(gateway, 'POST', '/keys/made/rotate', { gracePeriodSeconds: 0 });
    expect(await sendMessage(gateway, secret)).to.equal(401);
    expect(await sendMessage(gateway, again.body.secret)).to.equal(200);
    expect(await sendMessage(gateway, made)).to.equal(200);
    const byDefault = await admin(gateway, 'POST', '/keys/made/rotate');
    expect(Date.parse(byDefault.body.previousSecretExpiresAt) - Date.now()).to.be.greaterThan(23 * 3600_000);
    expect(await sendMessage(gateway, again.body.secret)).to.equal(200);
  });

  it('POST /keys/:id/revoke refuses the key on its next request, leaves others alone, and is idempotent', async () => {
    const made = (await admin(gateway, 'POST', '/keys', { id: 'made', name: 'Made' })).body.secret as string;
    const rotated = await admin(gateway, 'POST', '/keys/made/rotate', { gracePeriodSeconds: 3600 });
    expect(await sendMessage(gateway, rotated.body.secret)).to.equal(200);
    const revoked = await admin(gateway, 'POST', '/keys/made/revoke');
    expect(revoked.status).to.equal(200);
    expect(revoked.body).to.deep.include({ id: 'made', status: 'revoked' });
    expect(await sendMessage(gateway, made)).to.equal(401);
    expect(await sendMessage(gateway, rotated.body.secret)).to.equal(401);
    expect(await sendMessage(gateway, KEYS.haikuOnly, 'haiku')).to.equal(200);
    expect((await admin(gateway, 'POST', '/keys/made/revoke', {})).body.status).to.equal('revoked');
    expectAdminError(await admin(gateway, 'POST', '/keys/made/rotate'), 409, 'invalid_request_error', /revoked; a revoked key cannot be rotated/);
    expect((await admin(gateway, 'POST', '/keys/team-all/revoke')).body.status).to.equal('revoked');
    expect(await sendMessage(gateway, KEYS.all)).to.equal(401);
  });

  it('POST /keys/:id/restore undoes a revocation from the next request on, and is idempotent', async () => {
    expect((await admin(gateway, 'POST', '/keys/team-haiku/revoke')).body.status).to.equal('revoked');
    expect(await sendMessage(gateway, KEYS.haikuOnly, 'haiku')).to.equal(401);
    const restored = await admin(gateway, 'POST', '/keys/team-haiku/restore');
    expect(restored.status).to.equal(200);
    expect(restored.body).to.deep.include({ id: 'team-haiku', status: 'active' });
    expect(await sendMessage(gateway, KEYS.haikuOnly, 'haiku')).to.equal(200);
    expect((await admin(gateway, 'POST', '/keys/team-haiku/restore', {})).body.status).to.equal('active');
    expectAdminError(await admin(gateway, 'POST', '/keys/team-haiku/restore', { now: true }), 400, 'invalid_request_error', /unknown field "now"/);
    expectAdminError(await admin(gateway, 'POST', '/keys/nope/restore'), 404, 'not_found_error', /nope/);
  });

  it('GET /keys/:id/usage reports requests, tokens and credits per model for a month', async () => {
    const store = gateway.gateway.store;
    const settle = async (month: string, model: string, inputTokens: number, outputTokens: number, credits: number) => {
      const held = await store.reserveCredits('team-all', month, 1, null, 60_000);
      if (!held.ok) throw new Error('reservation refused');
      await store.settleCredits(held.reservation, { model, inputTokens, outputTokens, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits });
    };
    await settle('2025-03', 'model-sonnet-4.6', 100, 50, 0.00105);
    await settle('2025-03', 'model-sonnet-4.6', 200, 10, 0.00075);
    await settle('2025-03', 'model-haiku-4.5', 1000, 1000, 0.006);
    await settle('2025-04', 'model-haiku-4.5', 1, 1, 0.000006);

    const march = await admin(gateway, 'GET', '/keys/team-all/usage?month=2025-03');
    expect(march.status).to.equal(200);
    expect(march.body).to.deep.include({ keyId: 'team-all', month: '2025-03', monthResetsAt: '2025-04-01T00:00:00.000Z', monthlyCreditCap: null });
    expect(march.body.models.map((row: any) => [row.model, row.requests, row.inputTokens, row.outputTokens])).to.deep.equal([
      ['model-haiku-4.5', 1, 1000, 1000],
      ['model-sonnet-4.6', 2, 300, 60],
    ]);
    expect(march.body.models[1].credits).to.be.closeTo(0.0018, 1e-12);
    expect(march.body.totals).to.deep.include({ requests: 3, inputTokens: 1300, outputTokens: 1060 });
    expect((await admin(gateway, 'GET', '/keys/team-all/usage?month=2025-05')).body.models).to.deep.equal([]);
    const current = await admin(gateway, 'GET', '/keys/team-all/usage');
    expect(current.body.month).to.equal(new Date().toISOString().slice(0, 7));
  });

  it('GET /models lists the catalogue with pricing and aliases', async () => {
    const reply = await admin(gateway, 'GET', '/models');
    expect(reply.status).to.equal(200);
    expect(reply.body.data).to.have.length(gateway.config.models.length);
    expect(reply.body.data.find((model: any) => model.id === 'model-haiku-4.5')).to.deep.equal({
      id: 'model-haiku-4.5', displayName: 'model-haiku-4.5', aliases: ['haiku'], keyGroup: 'default',
      pricing: { inputPerMillion: 1, outputPerMillion: 5, cacheWritePerMillion: 1.25, cacheReadPerMillion: 0.1, cacheWrite1hPerMillion: 2, webSearchPerRequest: 0.01 },
    });
  });

  it('writes one audit line per change (who, what, key id) and never a secret', async () => {
    const created = await admin(gateway, 'POST', '/keys', { name: 'Audited', monthlyCreditCap: 9 });
    const id = created.body.key.id;
    await admin(gateway, 'PATCH', `/keys/${id}`, { rateLimitPerMinute: 3 });
    const rotated = await admin(gateway, 'POST', `/keys/${id}/rotate`, { gracePeriodSeconds: 60 });
    await admin(gateway, 'POST', `/keys/${id}/revoke`);
    await admin(gateway, 'POST', `/keys/${id}/revoke`);
    await admin(gateway, 'GET', '/keys');
    await admin(gateway, 'PATCH', `/keys/${id}`, { rateLimitPerMinute: 'x' });
    const audit = gateway.logLines.filter((line) => line.message === 'admin audit');
    expect(audit.map((line) => [line.who, line.action, line.key_id])).to.deep.equal([
      ['admin', 'key.create', id], ['admin', 'key.update', id], ['admin', 'key.rotate', id], ['admin', 'key.revoke', id],
    ]);
    expect(audit[0].changes).to.deep.include({ name: 'Audited', monthlyCreditCap: 9 });
    expect(audit[1].changes).to.deep.equal({ rateLimitPerMinute: 3 });
    expect(audit[2].changes).to.deep.equal({ gracePeriodSeconds: 60 });
    const everything = JSON.stringify(gateway.logLines);
    expect(everything).not.to.include(created.body.secret);
    expect(everything).not.to.include(rotated.body.secret);
    expect(everything).not.to.include(ADMIN_TOKEN);
  });
});

describe('admin API with a second key group', () => {
  let gateway: TestGateway;
  before(async () => {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    const shipped = require('../../../config.json');
    gateway = await startTestGateway({
      env: { ADMIN_TOKEN },
      overrides: {
        models: [...shipped.models, { id: 'fam-5', upstreamModel: 'fam-5', pricing: { inputPerMillion: 2, outputPerMillion: 8 } }],
        keyGroups: [{ id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', url: 'http://127.0.0.1:9', apiKeyEnv: 'TEST_FAMILY_API_KEY' } }],
      },
    });
  });
  after(async () => {
    await gateway.close();
  });

  it('creates and rotates a key in its group\'s prefix, with models of its family only', async () => {
    const models = await admin(gateway, 'GET', '/models');
    expect(models.body.keyGroups.map((group: any) => [group.id, group.keyPrefix])).to.deep.equal([['default', 'sk-cs4-'], ['family', 'sk-fam-']]);
    expect(models.body.data.find((model: any) => model.id === 'fam-5').keyGroup).to.equal('family');

    expectAdminError(await admin(gateway, 'POST', '/keys', { name: 'x', keyGroup: 'nope' }), 400, 'invalid_request_error', /keyGroup: "nope" is not a key group \(key groups: default, family\)/);
    expectAdminError(await admin(gateway, 'POST', '/keys', { name: 'x', keyGroup: 'family', allowedModels: ['model-haiku-4.5'] }), 400, 'invalid_request_error', /allowedModels: "model-haiku-4.5" is not a catalogue model id of key group "family"; choose from fam-5/);
    expectAdminError(await admin(gateway, 'POST', '/keys', { name: 'x', allowedModels: ['fam-5'] }), 400, 'invalid_request_error', /allowedModels: "fam-5"/);

    const created = await admin(gateway, 'POST', '/keys', { name: 'Family team', keyGroup: 'family', allowedModels: ['fam-5'] });
    expect(created.status).to.equal(201);
    expect(created.body.secret).to.match(/^sk-fam-[A-Za-z0-9]{40}$/);
    expect(created.body.key).to.deep.include({ keyGroup: 'family', allowedModels: ['fam-5'] });
    const listed = await fetch(`${gateway.url}/v1/models`, { headers: { 'x-api-key': created.body.secret } });
    expect(((await listed.json()) as any).data.map((model: any) => model.id)).to.deep.equal(['fam-5']);

    const rotated = await admin(gateway, 'POST', `/keys/${created.body.key.id}/rotate`, { gracePeriodSeconds: 0 });
    expect(rotated.body.secret).to.match(/^sk-fam-/);
    expect((await fetch(`${gateway.url}/v1/models`, { headers: { 'x-api-key': rotated.body.secret } })).status).to.equal(200);
    expect((await fetch(`${gateway.url}/v1/models`, { headers: { 'x-api-key': created.body.secret } })).status).to.equal(401);
    expectAdminError(await admin(gateway, 'PATCH', `/keys/${created.body.key.id}`, { allowedModels: ['model-haiku-4.5'] }), 400, 'invalid_request_error', /"model-haiku-4.5" is not a catalogue model id of key group "family"/);
  });
});

describe('admin API off', () => {
  it('answers 404 on /admin/v1 and /dashboard when ADMIN_TOKEN is unset, and says so at start', async () => {
    const gateway = await startTestGateway();
    try {
      for (const path of ['/admin/v1/keys', '/admin/v1/models', '/dashboard', '/dashboard/', '/dashboard/app.js']) {
        const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        expect(response.status, path).to.equal(404);
        expect(((await response.json()) as any).error.type).to.equal('not_found_error');
      }
      expect(gateway.logLines.some((line) => /admin API and dashboard are off: set ADMIN_TOKEN/.test(line.message))).to.equal(true);
    } finally {
      await gateway.close();
    }
  });

  it('says at start that it is on when ADMIN_TOKEN is set', async () => {
    const gateway = await startTestGateway({ env: { ADMIN_TOKEN } });
    try {
      expect(gateway.logLines.some((line) => /admin API on at \/admin\/v1/.test(line.message))).to.equal(true);
      expect(JSON.stringify(gateway.logLines)).not.to.include(ADMIN_TOKEN);
    } finally {
      await gateway.close();
    }
  });
});

describe('dashboard files', () => {
  let gateway: TestGateway;
  before(async () => {
    gateway = await startTestGateway({ env: { ADMIN_TOKEN } });
  });
  after(async () => {
    await gateway.close();
  });

  it('serves the page and its scripts with a strict content policy and no token in them', async () => {
    const page = await fetch(`${gateway.url}/dashboard/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.headers.get('content-security-policy')).to.match(/script-src 'self'.*frame-ancestors 'none'/);
    expect(page.headers.get('x-frame-options')).to.equal('DENY');
    expect(await page.text()).to.include('<title>Model Gateway · Keys</title>');
    for (const asset of ['app.js', 'api.js', 'chart.js', 'style.css']) {
      const response = await fetch(`${gateway.url}/dashboard/${asset}`);
      expect(response.status, asset).to.equal(200);
      expect(await response.text()).not.to.include(ADMIN_TOKEN);
    }
    const bare = await fetch(`${gateway.url}/dashboard`, { redirect: 'manual' });
    expect(bare.status).to.equal(301);
    expect(bare.headers.get('location')).to.equal('/dashboard/');
  });
});

describe('admin API with a controlled clock', () => {
  let now = Date.UTC(2025, 0, 31, 23, 0, 0);
  let gateway: TestGateway;
  before(async () => {
    gateway = await startTestGateway({ env: { ADMIN_TOKEN }, clock: () => now });
  });
  after(async () => {
    await gateway.close();
  });

  it('ends the old secret when the rotation grace period ends, and reports spend per UTC month', async () => {
    const made = (await admin(gateway, 'POST', '/keys', { id: 'made', name: 'Made' })).body.secret as string;
    const rotated = await admin(gateway, 'POST', '/keys/made/rotate', { gracePeriodSeconds: 60 });
    expect(rotated.body.previousSecretExpiresAt).to.equal('2025-01-31T23:01:00.000Z');
    expect(await sendMessage(gateway, made)).to.equal(200);
    now += 59_000;
    expect(await sendMessage(gateway, made)).to.equal(200);
    now += 1_000;
    expect(await sendMessage(gateway, made)).to.equal(401);
    expect(await sendMessage(gateway, rotated.body.secret)).to.equal(200);

    const january = await admin(gateway, 'GET', '/keys');
    expect(january.body).to.deep.include({ month: '2025-01', monthResetsAt: '2025-02-01T00:00:00.000Z' });
    now = Date.UTC(2025, 1, 1, 0, 0, 1);
    const february = await admin(gateway, 'GET', '/keys');
    expect(february.body.month).to.equal('2025-02');
    expect(february.body.data.find((key: any) => key.id === 'made').spend).to.deep.equal({ month: '2025-02', credits: 0 });
    // Settlement runs when each reply has closed: poll briefly for the last one.
    let usage = await admin(gateway, 'GET', '/keys/made/usage?month=2025-01');
    for (let attempt = 0; attempt < 40 && usage.body.totals.requests < 3; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      usage = await admin(gateway, 'GET', '/keys/made/usage?month=2025-01');
    }
    expect(usage.body.totals.requests).to.equal(3);
    expect(usage.body.models.map((row: any) => row.model)).to.deep.equal(['model-sonnet-4.6']);
  });
});

describe('admin API when the audit log cannot be written', function () {
  this.timeout(30_000);
  it('answers a change it made (a new key with its secret, a rotation with the new one) and logs the missing entry', async () => {
    const store = new MemoryStore();
    const gateway = await startTestGateway({ env: { ADMIN_TOKEN }, store });
    store.appendAudit = async () => { throw new Error('audit store unreachable'); };
    try {
      const created = await admin(gateway, 'POST', '/keys', { name: 'unaudited' });
      expect(created.status).to.equal(201);
      expect(created.body.secret).to.match(/^sk-cs4-/);
      const rotated = await admin(gateway, 'POST', `/keys/${created.body.key.id}/rotate`, {});
      expect(rotated.status).to.equal(200);
      expect(rotated.body.secret).to.match(/^sk-cs4-/);
      const missing = gateway.logLines.filter((line) => line.message === 'admin change made, but its audit log entry was not written');
      expect(missing.map((line) => line.action)).to.deep.equal(['key.create', 'key.rotate']);
    } finally {
      await gateway.close();
    }
  });
});
