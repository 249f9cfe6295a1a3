/**
 * Sign-in, sessions, roles and self-service keys (issue 44) against a real OpenID provider
 * (`oidc-provider` on loopback, spec/helpers/oidc-provider.ts), through its login and consent forms:
 * an org admin, a team admin and two members of one team sign in; each member makes a key through
 * /admin/v1/me/keys; a member cannot see the other's keys (404) nor raise a cap (403); the team admin
 * revokes a member's key and it is refused at once; CSRF and sign-out hold.
 */
import { expect } from 'chai';
import { admin, sendMessage } from '../helpers/admin';
import type { TestGateway } from '../helpers/gateway';
import type { TestOidcProvider } from '../helpers/oidc-provider';
import { asUser, CLIENT, signInAll, startSignInGateway, type TestSession } from '../helpers/people';
import { request, signIn } from '../helpers/sign-in-client';

describe('people: sign-in with an OpenID provider, roles and self-service keys', function () {
  this.timeout(60_000);
  let provider: TestOidcProvider;
  let gateway: TestGateway;
  const session: Record<string, TestSession> = {};

  before(async () => {
    let baseUrl: string;
    ({ provider, gateway, baseUrl } = await startSignInGateway());
    Object.assign(session, await signInAll(gateway, baseUrl, ['alice', 'bob', 'carol', 'dana']));
  });

  after(async () => {
    await gateway?.close();
    await provider?.close();
  });

  it('GET /me names the user, their roles and teams from the provider\'s groups, and the CSRF token', async () => {
    const me = await asUser(gateway, session.bob.cookie, 'GET', '/me');
    expect(me.status).to.equal(200);
    expect(me.body.user).to.deep.equal({ subject: 'bob', email: 'bob@example.com', name: 'Bob', groups: ['payments'] });
    expect(me.body.roles).to.deep.equal(['member']);
    expect(me.body.teams).to.deep.equal([{ id: 'payments', name: 'Payments', role: 'member', allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'], memberMonthlyCreditCap: 5, rateLimitPerMinute: 100 }]);
    expect(me.headers['x-csrf-token']).to.equal(me.body.csrfToken).and.to.have.length(43);
    expect((await asUser(gateway, session.alice.cookie, 'GET', '/me')).body.roles).to.deep.equal(['org-admin']);
    const dana = await asUser(gateway, session.dana.cookie, 'GET', '/me');
    expect(dana.body.roles).to.deep.equal(['team-admin', 'member']);
    expect(dana.body.teams.map((team: any) => [team.id, team.role])).to.deep.equal([['payments', 'team-admin']]);
    // ADMIN_TOKEN is the organisation admin, no user.
    expect((await admin(gateway, 'GET', '/me')).body).to.deep.include({ user: null, actor: 'admin-token', roles: ['org-admin'] });
  });

  it('a sign-in starts with PKCE, state and nonce, its cookie is HttpOnly and SameSite=Lax, and no secret reaches the log', async () => {
    const start = await request(`${gateway.url}/dashboard/login`);
    expect(start.status).to.equal(302);
    expect(start.headers.location).to.match(new RegExp(`^${provider.issuer}/auth\\?`));
    const query = new URL(start.headers.location!).searchParams;
    expect(query.get('code_challenge_method')).to.equal('S256');
    expect(query.get('redirect_uri')).to.equal(`${gateway.url}/dashboard/callback`);
    expect(query.get('state')).to.have.length.above(20);
    expect(query.get('nonce')).to.have.length.above(20);
    expect(start.headers['set-cookie']!.join()).to.match(/gateway_signin=[A-Za-z0-9_-]{43}; Max-Age=600; Path=\/dashboard; Expires=[^;]+; HttpOnly; SameSite=Lax/);
    const log = JSON.stringify(gateway.logLines);
    expect(log).not.to.include(session.bob.cookie);
    expect(log).not.to.include(CLIENT.secret);
    expect(gateway.logLines.filter((line) => line.message === 'sign-in').map((line) => line.subject)).to.include.members(['alice', 'bob', 'carol', 'dana']);
  });

  it('each member creates a key through /admin/v1/me/keys, with the team\'s policy, that works at once', async () => {
    for (const login of ['bob', 'carol']) {
      const created = await asUser(gateway, session[login].cookie, 'POST', '/me/keys', { name: `${login}'s laptop` }, session[login].csrf);
      expect(created.status).to.equal(201);
      expect(created.body.key).to.deep.include({ owner: login, team: 'payments', monthlyCreditCap: 5, rateLimitPerMinute: 100, allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'] });
      expect(await sendMessage(gateway, created.body.secret, 'model-haiku-4.5')).to.equal(200);
      expect(await sendMessage(gateway, created.body.secret, 'model-opus-4.6')).to.equal(403);
      (session[login] as any).key = created.body;
    }
    const listed = await asUser(gateway, session.bob.cookie, 'GET', '/me/keys');
    expect(listed.body.data.map((key: any) => key.id)).to.deep.equal([(session.bob as any).key.key.id]);
  });

  it('a member cannot see or touch the other\'s key (404), nor raise a limit (403 naming it)', async () => {
    const carolKey = (session.carol as any).key.key.id;
    const bobKey = (session.bob as any).key.key.id;
    const { cookie, csrf } = session.bob;
    expect((await asUser(gateway, cookie, 'GET', `/keys/${carolKey}`)).status).to.equal(404);
    expect((await asUser(gateway, cookie, 'GET', `/keys/${carolKey}/usage`)).status).to.equal(404);
    expect((await asUser(gateway, cookie, 'POST', `/me/keys/${carolKey}/revoke`, {}, csrf)).status).to.equal(404);
    expect((await asUser(gateway, cookie, 'POST', `/keys/${carolKey}/revoke`, {}, csrf)).status).to.equal(404);
    expect((await asUser(gateway, cookie, 'GET', '/keys')).body.data.map((key: any) => key.id)).to.deep.equal([bobKey]);

    const raised = await asUser(gateway, cookie, 'PATCH', `/keys/${bobKey}`, { monthlyCreditCap: 50 }, csrf);
    expect(raised.status).to.equal(403);
    expect(raised.body.error.message).to.match(/^monthlyCreditCap: the member cap of team "payments" is 5/);
    const uncapped = await asUser(gateway, cookie, 'POST', '/me/keys', { name: 'x', monthlyCreditCap: null }, csrf);
    expect([uncapped.status, uncapped.body.error.message]).to.satisfy(([status, message]: [number, string]) => status === 403 && message.startsWith('monthlyCreditCap'));
    const opus = await asUser(gateway, cookie, 'POST', '/me/keys', { name: 'x', allowedModels: ['model-opus-4.6'] }, csrf);
    expect(opus.status).to.equal(403);
    expect(opus.body.error.message).to.match(/^allowedModels: "model-opus-4.6" is not among team "payments"'s models/);
    const fast = await asUser(gateway, cookie, 'POST', '/me/keys', { name: 'x', rateLimitPerMinute: 1000 }, csrf);
    expect(fast.status).to.equal(403);
    expect(fast.body.error.message).to.match(/^rateLimitPerMinute/);
    // Lowering is allowed.
    expect((await asUser(gateway, cookie, 'PATCH', `/keys/${bobKey}`, { monthlyCreditCap: 2 }, csrf)).body.monthlyCreditCap).to.equal(2);
    // Organisation routes are closed to members.
    expect((await asUser(gateway, cookie, 'GET', '/upstreams')).status).to.equal(403);
    expect((await asUser(gateway, cookie, 'GET', '/users')).status).to.equal(403);
    expect((await asUser(gateway, cookie, 'POST', '/keys', { name: 'mine', team: 'payments' }, csrf)).status).to.equal(403);
  });

  it('a state-changing call of a session without its CSRF token is refused (403); ADMIN_TOKEN needs none', async () => {
    const bobKey = (session.bob as any).key.key.id;
    const none = await asUser(gateway, session.bob.cookie, 'POST', `/me/keys/${bobKey}/rotate`, {});
    expect(none.status).to.equal(403);
    expect(none.body.error.message).to.include('x-csrf-token');
    expect((await asUser(gateway, session.bob.cookie, 'POST', '/me/keys', { name: 'x' }, session.carol.csrf)).status).to.equal(403);
    expect((await admin(gateway, 'PATCH', `/keys/${bobKey}`, { name: 'renamed by the org' })).status).to.equal(200);
  });

  it('the team admin sees the team\'s keys and users, and revokes a member\'s key, refused at once', async () => {
    const bob = (session.bob as any).key;
    const { cookie, csrf } = session.dana;
    const keys = await asUser(gateway, cookie, 'GET', '/keys');
    expect(keys.body.data.map((key: any) => key.owner).sort()).to.deep.equal(['bob', 'carol']);
    const users = await asUser(gateway, cookie, 'GET', '/users');
    expect(users.body.data.map((user: any) => user.subject)).to.deep.equal(['bob', 'carol', 'dana']);
    expect((await asUser(gateway, session.alice.cookie, 'GET', '/users')).body.data.map((user: any) => user.subject)).to.deep.equal(['alice', 'bob', 'carol', 'dana']);
    // A team admin cannot pass the member cap either.
    expect((await asUser(gateway, cookie, 'PATCH', `/keys/${bob.key.id}`, { monthlyCreditCap: 6 }, csrf)).status).to.equal(403);
    expect(await sendMessage(gateway, bob.secret, 'model-haiku-4.5')).to.equal(200);
    const revoked = await asUser(gateway, cookie, 'POST', `/keys/${bob.key.id}/revoke`, {}, csrf);
    expect(revoked.status).to.equal(200);
    expect(revoked.body.status).to.equal('revoked');
    expect(await sendMessage(gateway, bob.secret, 'model-haiku-4.5')).to.equal(401);
    const audit = gateway.logLines.filter((line) => line.message === 'admin audit' && line.action === 'key.revoke');
    expect(audit.map((line) => [line.who, line.key_id])).to.deep.equal([['dana', bob.key.id]]);
    // A team admin makes keys for their team within its policy, not outside it.
    const made = await asUser(gateway, cookie, 'POST', '/keys', { name: 'for bob', team: 'payments', owner: 'bob' }, csrf);
    expect(made.status).to.equal(201);
    expect(made.body.key).to.deep.include({ owner: 'bob', team: 'payments', rateLimitPerMinute: 100 });
    // It takes the team's models (not every model) and no cap of its own: the member cap holds it at each request.
    expect(made.body.key).to.deep.include({ allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'], monthlyCreditCap: null });
    // Nor can a team admin take a key out of the team, hand it to someone else, or read the organisation's teams.
    for (const change of [{ team: null }, { owner: 'carol' }]) {
      const moved = await asUser(gateway, cookie, 'PATCH', `/keys/${made.body.key.id}`, change, csrf);
      expect([moved.status, moved.body.error.message]).to.deep.equal([403, 'team and owner of a key are changed by organisation admins only']);
    }
    expect((await asUser(gateway, cookie, 'GET', '/teams')).status).to.equal(403);
    expect((await asUser(gateway, cookie, 'GET', '/usage?groupBy=team')).status).to.equal(403);
    expect((await asUser(gateway, cookie, 'POST', '/keys', { name: 'x', team: 'payments', monthlyCreditCap: 9 }, csrf)).status).to.equal(403);
  });

  it('a member added by email joins the team at the next sign-in (providers without groups)', async () => {
    const before = await signIn(gateway.url, 'erin');
    expect((await asUser(gateway, before.sessionCookie, 'GET', '/me')).body.teams).to.deep.equal([]);
    const added = await asUser(gateway, session.dana.cookie, 'POST', '/teams/payments/members', { email: 'erin@example.com' }, session.dana.csrf);
    expect(added.status).to.equal(201);
    expect((await asUser(gateway, session.bob.cookie, 'POST', '/teams/payments/members', { email: 'x@example.com' }, session.bob.csrf)).status).to.equal(403);
    expect((await admin(gateway, 'POST', '/teams/nope/members', { email: 'x@example.com' })).status).to.equal(404);
    expect((await admin(gateway, 'POST', '/teams/payments/members', { email: 'not an email' })).status).to.equal(400);
    const after = await signIn(gateway.url, 'erin');
    expect((await asUser(gateway, after.sessionCookie, 'GET', '/me')).body.teams.map((team: any) => team.id)).to.deep.equal(['payments']);
  });

  it('a stolen session cookie stops working at sign-out', async () => {
    const { sessionCookie, setCookie } = await signIn(gateway.url, 'carol');
    // 256 random bits; HttpOnly, SameSite=Lax, for the session's lifetime (1 h); not Secure on a loopback http base URL.
    const cookie = setCookie.find((line) => line.startsWith('gateway_session='))!;
    expect(cookie).to.match(/^gateway_session=[A-Za-z0-9_-]{43}; Max-Age=3600; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    const me = await asUser(gateway, sessionCookie, 'GET', '/me');
    expect(me.status).to.equal(200);
    const withoutToken = await request(`${gateway.url}/dashboard/logout`, { method: 'POST', headers: { cookie: `gateway_session=${sessionCookie}` } });
    expect(withoutToken.status).to.equal(403);
    const out = await request(`${gateway.url}/dashboard/logout`, { method: 'POST', headers: { cookie: `gateway_session=${sessionCookie}`, 'x-csrf-token': me.body.csrfToken } });
    expect(out.status).to.equal(204);
    expect(out.headers['set-cookie']!.join()).to.match(/gateway_session=;/);
    const stolen = await asUser(gateway, sessionCookie, 'GET', '/me');
    expect(stolen.status).to.equal(401);
    expect(stolen.body.error.message).to.match(/session expired or signed out/);
    // Other sessions of the same user stay.
    expect((await asUser(gateway, session.carol.cookie, 'GET', '/me')).status).to.equal(200);
  });

  it('a callback without its sign-in, or with a forged state, opens no session and is logged', async () => {
    const failedEntries = async () => (await admin(gateway, 'GET', '/audit?action=signin.failed')).body.data.length;
    const failedBefore = await failedEntries();
    const orphan = await request(`${gateway.url}/dashboard/callback?code=x&state=y`);
    expect(orphan.status).to.equal(400);
    expect(JSON.parse(orphan.body).error.message).to.match(/no sign-in under way/);
    // A callback carrying no sign-in (anyone may send one) is logged, but grows no audit log.
    expect(await failedEntries()).to.equal(failedBefore);
    const start = await request(`${gateway.url}/dashboard/login`);
    const pending = /gateway_signin=([^;]+)/.exec(start.headers['set-cookie']!.join())![1];
    const forged = await request(`${gateway.url}/dashboard/callback?code=abc&state=forged&iss=${encodeURIComponent(provider.issuer)}`, { headers: { cookie: `gateway_signin=${pending}` } });
    expect(forged.status).to.equal(401);
    expect(JSON.parse(forged.body).error.message).to.match(/^sign-in failed: /);
    expect(forged.headers['set-cookie']!.join()).not.to.include('gateway_session=');
    // The pending sign-in is used up: a second try is refused too.
    expect((await request(`${gateway.url}/dashboard/callback?code=abc&state=forged`, { headers: { cookie: `gateway_signin=${pending}` } })).status).to.equal(400);
    expect(gateway.logLines.filter((line) => line.message === 'sign-in failed').length).to.be.at.least(2);
    expect(await failedEntries()).to.equal(failedBefore + 1);
    expect((await asUser(gateway, 'A'.repeat(43), 'GET', '/me')).status).to.equal(401);
  });

  // Last: it uses up this address's sign-ins for the minute.
  it('limits sign-ins started from one address (429 with retry-after), as each keeps a pending sign-in in the store', async () => {
    let refused;
    for (let attempt = 0; attempt <= 120 && !refused; attempt++) {
      const reply = await request(`${gateway.url}/dashboard/login`);
      if (reply.status === 429) refused = reply;
      else expect(reply.status).to.equal(302);
    }
    expect(refused, 'no 429 after 121 sign-ins').not.to.equal(undefined);
    expect(refused!.headers['retry-after']).to.equal('60');
    expect(JSON.parse(refused!.body).error).to.deep.equal({ type: 'rate_limit_error', message: 'too many sign-ins from this address; retry in a minute' });
  });
});
