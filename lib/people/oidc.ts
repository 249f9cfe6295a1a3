/**
 * The OpenID Connect relying party (authorization code flow with PKCE) through `openid-client` v6, the
 * certified library: https://github.com/panva/openid-client (API: docs/README.md there); the flow:
 * https://openid.net/specs/openid-connect-core-1_0.html#CodeFlowAuth, PKCE: RFC 7636. The library is
 * ESM-only and loaded with a real dynamic `import()` the first time a sign-in starts, so a gateway
 * without `auth.oidc` never loads it.
 */
import { pathToFileURL } from 'node:url';
import type * as OpenIdClient from 'openid-client';
import type { OidcConfig } from '../config/people';
import type { PendingSignIn } from '../store/people-types';

/** What the gateway keeps of a signed-in user from the ID token (or userinfo). */
export interface SignInClaims {
  subject: string;
  email: string | null;
  name: string | null;
  groups: string[];
}

export interface RelyingParty {
  /**
   * Start a sign-in: a fresh PKCE verifier, state and nonce (to keep in the store) and the provider's
   * authorization URL to redirect the browser to.
   * @throws Error when the provider's discovery document cannot be read
   */
  start(returnTo: string): Promise<{ pending: PendingSignIn; url: string }>;
  /**
   * Finish a sign-in from the callback's full URL (under the configured base URL): the library checks
   * state, exchanges the code with the PKCE verifier, and validates the ID token (signature, issuer,
   * audience, expiry, nonce). Groups come from the ID token's `groupsClaim`, or from userinfo when the
   * ID token lacks it.
   * @throws Error with the provider's or the library's message when any check fails
   */
  finish(callbackUrl: URL, pending: PendingSignIn): Promise<SignInClaims>;
}

/** At most this many groups are kept of a user (a provider listing more is cut, not trusted to be small). */
const MAX_GROUPS = 500;

/** `import()` that TypeScript's CommonJS output keeps as a real dynamic import (openid-client is ESM-only). */
const importEsm = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** Whether `url` is plain http to a loopback host (allowed for a local provider, as in the tests). */
export function isLoopbackHttp(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(hostname);
}

/** A claim's groups: an array of strings or one string; anything else is none. */
export function readGroups(value: unknown): string[] {
  const list = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  return [...new Set(list.filter((group): group is string => typeof group === 'string' && group.length > 0 && group.length <= 256))].slice(0, MAX_GROUPS);
}

const stringClaim = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value.slice(0, 320) : null);

/**
 * The relying party of `oidc`, discovering the provider on first use (and again after a failed discovery).
 * @param redirectUri `<baseUrl>/dashboard/callback`
 * @param clientSecret the client secret (env `clientSecretEnv`); undefined: a public client (PKCE only)
 */
export function createRelyingParty(oidc: OidcConfig, redirectUri: string, clientSecret: string | undefined): RelyingParty {
  let loaded: Promise<{ client: typeof OpenIdClient; config: OpenIdClient.Configuration }> | null = null;
  const load = () => {
    loaded ??= (async () => {
      const client = (await importEsm(pathToFileURL(require.resolve('openid-client')).href)) as typeof OpenIdClient;
      const config = await client.discovery(
        new URL(oidc.issuer), oidc.clientId, clientSecret, clientSecret === undefined ? client.None() : client.ClientSecretPost(clientSecret),
        isLoopbackHttp(oidc.issuer) ? { execute: [client.allowInsecureRequests] } : undefined,
      );
      return { client, config };
    })();
    loaded.catch(() => { loaded = null; });
    return loaded;
  };
  return {
    async start(returnTo) {
      const { client, config } = await load();
      const pending: PendingSignIn = { codeVerifier: client.randomPKCECodeVerifier(), state: client.randomState(), nonce: client.randomNonce(), returnTo };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: oidc.scopes.join(' '),
        code_challenge: await client.calculatePKCECodeChallenge(pending.codeVerifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce,
      });
      return { pending, url: url.href };
    },
    async finish(callbackUrl, pending) {
      const { client, config } = await load();
      const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: pending.codeVerifier, expectedState: pending.state, expectedNonce: pending.nonce, idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      let source: Record<string, unknown> = claims;
      // Many providers release groups (and at times email and name) only at the userinfo endpoint.
      if (claims[oidc.groupsClaim] === undefined && tokens.access_token) {
        const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
        source = { ...userinfo, ...claims, [oidc.groupsClaim]: userinfo[oidc.groupsClaim] };
      }
      return {
        subject: claims.sub,
        email: stringClaim(source.email),
        name: stringClaim(source.name),
        groups: readGroups(source[oidc.groupsClaim]),
      };
    },
  };
}
