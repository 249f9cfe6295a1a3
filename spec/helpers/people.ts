/** The people of the sign-in tests: users in groups, the gateway's OIDC client, its config, a call with a session. */
import type { GatewayStore } from '../../lib/store/types';
import { ADMIN_TOKEN } from './admin';
import { startTestGateway, type TestGateway } from './gateway';
import { startOidcProvider, type TestOidcProvider, type TestUser } from './oidc-provider';
import { freePort } from './ports';
import { request, signIn } from './sign-in-client';

export const PEOPLE: Record<string, TestUser> = {
  alice: { email: 'alice@example.com', name: 'Alice Admin', groups: ['platform-admins'] },
  bob: { email: 'bob@example.com', name: 'Bob', groups: ['payments'] },
  carol: { email: 'carol@example.com', name: 'Carol', groups: ['payments', 'staff'] },
  dana: { email: 'dana@example.com', name: 'Dana Lead', groups: ['payments-leads'] },
  erin: { email: 'Erin@Example.com', name: 'Erin', groups: [] },
};
export const CLIENT = { id: 'model-gateway', secret: 'test-oidc-client-secret-0123456789' };

/** The config of a gateway signing in with `issuer`, at `baseUrl`. */
export function signInOverrides(baseUrl: string, issuer: string): Record<string, unknown> {
  return {
    baseUrl,
    auth: { sessionTtl: '1h', oidc: { issuer, clientId: CLIENT.id, clientSecretEnv: 'TEST_OIDC_CLIENT_SECRET', scopes: ['openid', 'email', 'profile', 'groups'], adminGroups: ['platform-admins'] } },
    teams: [{
      id: 'payments', name: 'Payments', oidcGroups: ['payments'], adminGroups: ['payments-leads'],
      memberMonthlyCreditCap: 5, allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'], rateLimitPerMinute: 100,
    }],
  };
}

/** An admin API call with a session cookie (and the CSRF token when given). */
export async function asUser(gateway: { url: string }, session: string, method: string, path: string, body?: unknown, csrf?: string) {
  const headers: Record<string, string> = { cookie: `gateway_session=${session}` };
  if (csrf) headers['x-csrf-token'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const reply = await request(`${gateway.url}/admin/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: reply.status, headers: reply.headers, body: reply.body ? JSON.parse(reply.body) : null };
}

/** A signed-in user's session cookie and CSRF token (`GET /admin/v1/me`). */
export interface TestSession { cookie: string; csrf: string }

/** Sign each of `logins` in through the provider's login form at `baseUrl`, and read each one's CSRF token from `gateway`. */
export async function signInAll(gateway: { url: string }, baseUrl: string, logins: readonly string[]): Promise<Record<string, TestSession>> {
  const sessions: Record<string, TestSession> = {};
  for (const login of logins) {
    const { sessionCookie } = await signIn(baseUrl, login);
    sessions[login] = { cookie: sessionCookie, csrf: (await asUser(gateway, sessionCookie, 'GET', '/me')).body.csrfToken };
  }
  return sessions;
}

/**
 * A provider with PEOPLE on loopback and a gateway signing in with it at `baseUrl` (its own port), with
 * ADMIN_TOKEN, on `store` (default: the memory store).
 */
export async function startSignInGateway(store?: GatewayStore): Promise<{ provider: TestOidcProvider; gateway: TestGateway; baseUrl: string }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const provider = await startOidcProvider({ users: PEOPLE, clientId: CLIENT.id, clientSecret: CLIENT.secret, redirectUris: [`${baseUrl}/dashboard/callback`] });
  const gateway = await startTestGateway({
    overrides: signInOverrides(baseUrl, provider.issuer),
    env: { PORT: String(port), ADMIN_TOKEN, TEST_OIDC_CLIENT_SECRET: CLIENT.secret },
    store,
  });
  return { provider, gateway, baseUrl };
}
