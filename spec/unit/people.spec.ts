/**
 * lib/people and the store's people role, without a provider: the store role on memory (the contract
 * spec/helpers/people-store-contract.ts; Redis in people-redis.spec.ts), membership and roles from groups, the team policy, the sign-in config
 * checks, cookie and groups parsing.
 */
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../lib/config';
import type { TeamConfig } from '../../lib/config/people';
import type { Actor, UserActor } from '../../lib/admin/actor';
import { readGroups } from '../../lib/people/oidc';
import { mayManageKey, resolveMembership, rolesOf } from '../../lib/people/roles';
import { readCookie } from '../../lib/people/sessions';
import { applyTeamPolicy, withTeamDefaults } from '../../lib/people/team-policy';
import { MAX_PENDING_SIGN_INS, MemoryPeopleStore } from '../../lib/store/memory-people';
import { describePeopleStoreContract } from '../helpers/people-store-contract';

const team = (fields: Partial<TeamConfig> = {}): TeamConfig => ({
  id: 'payments', name: 'Payments', oidcGroups: ['payments'], adminGroups: ['payments-leads'], monthlyCreditCap: 100,
  memberMonthlyCreditCap: 5, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100, ...fields,
});

/** The people role's contract, run on each implementation; `wait` lets `ms` of the store's clock pass. */
describePeopleStoreContract('memory', async () => {
  // The memory role's clock starts at the real time (sessions carry their expiry, epoch ms) and moves by hand.
  let now = Date.now();
  return {
    people: new MemoryPeopleStore(() => now),
    wait: async (ms) => { now += ms; },
    close: async () => undefined,
  };
});

describe('people store role: memory bounds', () => {
  it('keeps at most MAX_PENDING_SIGN_INS sign-ins under way, dropping the oldest', async () => {
    const people = new MemoryPeopleStore(() => 0);
    const pending = { codeVerifier: 'v', state: 's', nonce: 'n', returnTo: '/' };
    for (let i = 0; i <= MAX_PENDING_SIGN_INS; i++) await people.savePendingSignIn(`p${i}`, pending, 60_000);
    expect(await people.takePendingSignIn('p0')).to.equal(null);
    expect(await people.takePendingSignIn('p1')).to.deep.equal(pending);
    expect(await people.takePendingSignIn(`p${MAX_PENDING_SIGN_INS}`)).to.deep.equal(pending);
  });
});

describe('people: membership and roles', () => {
  const teams = [team(), team({ id: 'search', oidcGroups: ['search'], adminGroups: ['search-leads'] })];

  it('works out teams, team admin and org admin from the provider\'s groups and the email\'s teams', () => {
    expect(resolveMembership(['payments'], ['admins'], teams, [])).to.deep.equal({ orgAdmin: false, teams: ['payments'], adminOf: [] });
    expect(resolveMembership(['search-leads', 'payments'], ['admins'], teams, [])).to.deep.equal({ orgAdmin: false, teams: ['payments', 'search'], adminOf: ['search'] });
    expect(resolveMembership(['admins'], ['admins'], teams, ['search'])).to.deep.equal({ orgAdmin: true, teams: ['search'], adminOf: [] });
    expect(resolveMembership([], ['admins'], teams, ['gone'])).to.deep.equal({ orgAdmin: false, teams: [], adminOf: [] });
  });

  const actor = (fields: Partial<UserActor>): Actor => ({
    kind: 'user', subject: 'bob', email: null, name: null, groups: [], orgAdmin: false, teams: [], adminOf: [], csrfToken: 'c', sessionId: 's', ...fields,
  });

  it('names the roles and what each may manage', () => {
    expect(rolesOf({ kind: 'admin-token' })).to.deep.equal(['org-admin']);
    expect(rolesOf(actor({ teams: ['payments'] }))).to.deep.equal(['member']);
    expect(rolesOf(actor({ teams: ['payments'], adminOf: ['payments'], orgAdmin: true }))).to.deep.equal(['org-admin', 'team-admin', 'member']);
    const cases: Array<[Partial<UserActor> | 'token', { owner?: string | null; team?: string | null }, boolean]> = [
      ['token', { owner: 'carol', team: 'payments' }, true],
      [{ orgAdmin: true }, { owner: null, team: null }, true],
      [{ teams: ['payments'] }, { owner: 'bob', team: 'payments' }, true],
      [{ teams: ['payments'] }, { owner: 'carol', team: 'payments' }, false],
      [{ teams: ['payments'] }, { owner: null, team: null }, false],
      [{ adminOf: ['payments'] }, { owner: 'carol', team: 'payments' }, true],
      [{ adminOf: ['payments'] }, { owner: 'carol', team: 'search' }, false],
    ];
    for (const [who, key, expected] of cases) {
      expect(mayManageKey(who === 'token' ? { kind: 'admin-token' } : actor(who), key), JSON.stringify([who, key])).to.equal(expected);
    }
  });
});

describe('people: the team policy over its members\' keys', () => {
  it('fills in the team\'s defaults, and refuses a limit above it with 403 naming the limit', () => {
    expect(withTeamDefaults(team(), {}, 60)).to.deep.equal({ allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 5, rateLimitPerMinute: 100 });
    expect(withTeamDefaults(team({ rateLimitPerMinute: null }), { monthlyCreditCap: 2 }, 60)).to.include({ monthlyCreditCap: 2, rateLimitPerMinute: 60 });
    const refused: Array<[object, RegExp]> = [
      [{ monthlyCreditCap: 6 }, /^monthlyCreditCap: the member cap of team "payments" is 5/],
      [{ monthlyCreditCap: null }, /^monthlyCreditCap: .* or absent$/],
      [{ allowedModels: null }, /^allowedModels: team "payments" allows only model-haiku-4.5/],
      [{ allowedModels: ['model-opus-4.6'] }, /^allowedModels: "model-opus-4.6"/],
      [{ rateLimitPerMinute: 101 }, /^rateLimitPerMinute: team "payments" allows at most 100/],
    ];
    for (const [limits, message] of refused) {
      expect(() => applyTeamPolicy(team(), limits, 'refuse', 60), JSON.stringify(limits)).to.throw(message).with.property('status', 403);
    }
    expect(() => applyTeamPolicy(team(), { monthlyCreditCap: 5, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100 }, 'refuse', 60)).not.to.throw();
    expect(() => applyTeamPolicy(team({ memberMonthlyCreditCap: null, allowedModels: null }), { monthlyCreditCap: null, allowedModels: null }, 'refuse', 60)).not.to.throw();
  });
});

describe('people: sign-in config', () => {
  const base = (fields: Record<string, unknown>) => ({
    upstream: { url: 'http://127.0.0.1:9', apiKeyEnv: 'UPSTREAM_API_KEY', timeoutMs: 1000 },
    models: [{ id: 'model-a', upstreamModel: 'up-a', pricing: { inputPerMillion: 1, outputPerMillion: 2 } }],
    ...fields,
  });
  const oidc = (fields: Record<string, unknown> = {}) => ({ oidc: { issuer: 'https://id.example.com/', clientId: 'gw', clientSecretEnv: 'OIDC_SECRET', ...fields } });

  it('takes https, or plain http on loopback, and reads the client secret from its env variable', () => {
    const config = parseConfig(base({ baseUrl: 'https://gw.example.com', auth: oidc() }), { OIDC_SECRET: 's3cret' });
    expect(config.auth.oidc).to.deep.include({ issuer: 'https://id.example.com', clientSecret: 's3cret', groupsClaim: 'groups', scopes: ['openid', 'email', 'profile'] });
    expect(config.auth.sessionTtlSeconds).to.equal(8 * 3600);
    const local = parseConfig(base({ baseUrl: 'http://127.0.0.1:8080', auth: { ...oidc({ issuer: 'http://localhost:9000', clientSecretEnv: undefined }), sessionTtl: '30m' } }), {});
    expect(local.auth.oidc).to.deep.include({ clientSecret: null, clientSecretEnv: null });
    expect(local.auth.sessionTtlSeconds).to.equal(1800);
  });

  it('refuses at start what would be unsafe or cannot work, saying how to fix it', () => {
    const refused: Array<[Record<string, unknown>, Record<string, string>, RegExp]> = [
      [{ auth: oidc() }, { OIDC_SECRET: 's' }, /auth\.oidc needs baseUrl/],
      [{ baseUrl: 'http://gw.example.com', auth: oidc() }, { OIDC_SECRET: 's' }, /baseUrl: "http:\/\/gw.example.com" must be https .* loopback/],
      [{ baseUrl: 'https://gw.example.com', auth: oidc({ issuer: 'http://id.example.com' }) }, { OIDC_SECRET: 's' }, /auth\.oidc\.issuer: .* must be https/],
      [{ baseUrl: 'https://gw.example.com', auth: oidc() }, {}, /clientSecretEnv names env OIDC_SECRET, which is not set/],
    ];
    for (const [fields, env, message] of refused) {
      expect(() => parseConfig(base(fields), env), message.source).to.throw(ConfigError, message);
    }
  });
});

describe('people: cookies and groups as read', () => {
  it('reads only token-shaped cookie values, and groups as strings', () => {
    expect(readCookie('a=1; gateway_session=abc_DEF-9; b=2', 'gateway_session')).to.equal('abc_DEF-9');
    expect(readCookie('gateway_session="x y"', 'gateway_session')).to.equal(undefined);
    expect(readCookie(undefined, 'gateway_session')).to.equal(undefined);
    expect(readCookie('xgateway_session=abc', 'gateway_session')).to.equal(undefined);
    expect(readGroups(['a', 'a', 7, '', 'b'])).to.deep.equal(['a', 'b']);
    expect(readGroups('solo')).to.deep.equal(['solo']);
    expect(readGroups({ a: 1 })).to.deep.equal([]);
  });
});
