/**
 * A real OpenID provider for the sign-in tests: `oidc-provider` (the certified Node implementation,
 * https://github.com/panva/node-oidc-provider, ESM-only: loaded with a real dynamic import) on loopback,
 * with its development login and consent forms (`features.devInteractions`), one confidential client
 * registered with the gateway's redirect URI, and users in groups (`findAccount` returning claims with
 * `groups`). By default groups are released only at userinfo (the provider's `conformIdTokenClaims`),
 * as many providers do; `groupsInIdToken` puts them in the ID token too.
 */
import http from 'node:http';
import { listenOnLoopback } from '../../lib/http/loopback';
import { importEsm } from './client-matrix';

export interface TestUser {
  email: string;
  name: string;
  groups: string[];
}

export interface OidcProviderOptions {
  /** account id (what the login form takes) -> claims */
  users: Record<string, TestUser>;
  clientId: string;
  clientSecret: string;
  /** The gateway's `<baseUrl>/dashboard/callback`. */
  redirectUris: string[];
  /** Claims of the scopes in the ID token too (not only at userinfo). Default false. */
  groupsInIdToken?: boolean;
}

export interface TestOidcProvider {
  /** The issuer, `http://127.0.0.1:<port>`. */
  issuer: string;
  close(): Promise<void>;
}

/** Start the provider (see the file's comment). */
export async function startOidcProvider(options: OidcProviderOptions): Promise<TestOidcProvider> {
  const { Provider } = await importEsm('oidc-provider');
  const server = http.createServer();
  const { url, close } = await listenOnLoopback(server);
  const provider = new Provider(url, {
    clients: [{
      client_id: options.clientId, client_secret: options.clientSecret, redirect_uris: options.redirectUris,
      grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post',
    }],
    async findAccount(_ctx: unknown, id: string) {
      const user = options.users[id];
      if (!user) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, email: user.email, email_verified: true, name: user.name, groups: user.groups }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    cookies: { keys: ['test-only-cookie-signing-key-0123456789'] },
    conformIdTokenClaims: !options.groupsInIdToken,
    features: { devInteractions: { enabled: true } },
  });
  // Its development-mode notices would fill the test output.
  provider.on('server_error', (_ctx: unknown, err: Error) => console.error('oidc-provider server_error', err));
  server.on('request', provider.callback());
  return { issuer: url, close };
}
