/**
 * Sign-in across two gateway instances on one Redis (issue 44): the pending sign-in and the session
 * live in the store, so the instance that gets the provider's redirect back need not be the one that
 * started the sign-in, and every later call of the session, its sign-out included, holds on both.
 * Both instances serve one public base URL (the first one's; the second gets its requests with that
 * Host, as behind a load balancer).
 */
import { expect } from 'chai';
import { ADMIN_TOKEN } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { startOidcProvider, type TestOidcProvider } from '../helpers/oidc-provider';
import { CLIENT, PEOPLE, signInOverrides } from '../helpers/people';
import { freePort } from '../helpers/ports';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { request, signIn } from '../helpers/sign-in-client';

describe('people: sign-in across two instances sharing Redis', function () {
  this.timeout(60_000);
  const prefix = uniqueRedisPrefix('people');
  let provider: TestOidcProvider;
  let first: TestGateway;
  let second: TestGateway;
  let baseUrl: string;

  /** An admin API call for the public base URL, served by `instance`. */
  const call = async (instance: TestGateway, session: string, method: string, path: string, body?: unknown, csrf?: string) => {
    const headers: Record<string, string> = { cookie: `gateway_session=${session}`, ...(csrf ? { 'x-csrf-token': csrf } : {}) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const reply = await request(`${baseUrl}/admin/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), connectTo: instance.url });
    return { status: reply.status, body: reply.body ? JSON.parse(reply.body) : null };
  };
  const message = async (instance: TestGateway, secret: string) => (await request(`${baseUrl}/v1/messages`, {
    method: 'POST', connectTo: instance.url,
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'model-haiku-4.5', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
  })).status;

  before(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    provider = await startOidcProvider({ users: PEOPLE, clientId: CLIENT.id, clientSecret: CLIENT.secret, redirectUris: [`${baseUrl}/dashboard/callback`], groupsInIdToken: true });
    const env = { ADMIN_TOKEN, TEST_OIDC_CLIENT_SECRET: CLIENT.secret };
    first = await startTestGateway({ overrides: signInOverrides(baseUrl, provider.issuer), env: { ...env, PORT: String(port) }, store: await connectTestRedisStore(prefix) });
    second = await startTestGateway({ overrides: signInOverrides(baseUrl, provider.issuer), env: { ...env, PORT: '0' }, store: await connectTestRedisStore(prefix) });
  });

  after(async () => {
    await first?.close();
    await second?.close();
    await provider?.close();
    await deleteRedisPrefix(prefix);
  });

  it('a sign-in started on one instance finishes on the other; the session, its keys and its sign-out hold on both', async () => {
    expect(first.gateway.store.kind).to.equal('redis');
    const bob = await signIn(baseUrl, 'bob', { connectLoginTo: first.url, connectCallbackTo: second.url });
    expect(bob.trail[0]).to.match(/^302 GET .*\/dashboard\/login$/);
    const me = await call(first, bob.sessionCookie, 'GET', '/me');
    expect(me.status).to.equal(200);
    expect(me.body.teams.map((team: any) => team.id)).to.deep.equal(['payments']);
    const csrf = me.body.csrfToken;

    const created = await call(second, bob.sessionCookie, 'POST', '/me/keys', { name: 'laptop' }, csrf);
    expect(created.status).to.equal(201);
    expect(await message(first, created.body.secret)).to.equal(200);

    // The team admin, signed in through the other way round, revokes it: refused at once on both.
    const dana = await signIn(baseUrl, 'dana', { connectLoginTo: second.url, connectCallbackTo: first.url });
    const danaCsrf = (await call(second, dana.sessionCookie, 'GET', '/me')).body.csrfToken;
    expect((await call(first, dana.sessionCookie, 'GET', '/users')).body.data.map((user: any) => user.subject)).to.deep.equal(['bob', 'dana']);
    expect((await call(first, dana.sessionCookie, 'POST', `/keys/${created.body.key.id}/revoke`, {}, danaCsrf)).status).to.equal(200);
    expect(await message(second, created.body.secret)).to.equal(401);
    expect(await message(first, created.body.secret)).to.equal(401);

    // Sign-out on one instance ends the session on the other.
    const out = await request(`${baseUrl}/dashboard/logout`, { method: 'POST', connectTo: first.url, headers: { cookie: `gateway_session=${bob.sessionCookie}`, 'x-csrf-token': csrf } });
    expect(out.status).to.equal(204);
    expect((await call(second, bob.sessionCookie, 'GET', '/me')).status).to.equal(401);
    expect((await call(second, dana.sessionCookie, 'GET', '/me')).status).to.equal(200);
  });

  it('a pending sign-in is served once, whichever instance gets the callback', async () => {
    const start = await request(`${baseUrl}/dashboard/login`, { connectTo: first.url });
    const pending = /gateway_signin=([^;]+)/.exec(start.headers['set-cookie']!.join())![1];
    const once = await request(`${baseUrl}/dashboard/callback?code=x&state=y`, { connectTo: second.url, headers: { cookie: `gateway_signin=${pending}` } });
    expect(once.status).to.equal(401);
    const twice = await request(`${baseUrl}/dashboard/callback?code=x&state=y`, { connectTo: first.url, headers: { cookie: `gateway_signin=${pending}` } });
    expect(twice.status).to.equal(400);
  });
});
