/**
 * Auth: finds the caller's key by the SHA-256 of the secret it sent (the store compares digests in
 * constant time) and puts it on the context. The store may answer from the key's record as this
 * process last saw it (no round trip to Redis): the rate-limit step's admission then checks that
 * record's version, the secret and the revocation in the store, in the same round trip that counts
 * the request and holds its credits, before anything reaches the upstream. A step that refuses a
 * request for the key's settings confirms them with `ctx.confirmKey()` first. Which header a route takes:
 * - native (`/v1/messages*`): `x-api-key`, or `Authorization: Bearer` (built by current native SDKs);
 *   when both are sent, `x-api-key` wins;
 * - chat (`/v1/chat/completions`, `/v1/responses*`): `Authorization: Bearer` only;
 * - models (`/v1/models`): either.
 * Missing, unknown, expired or revoked keys get 401. Error messages never echo the secret.
 */
import type { RequestHandler } from 'express';
import { getContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { DEFAULT_KEY_PREFIX } from '../lib/config/key-groups';
import { hashSecret } from '../lib/keys/secrets';
import type { KeyStore } from '../lib/store/types';

export type AuthHeaders = 'native' | 'chat' | 'either';

export interface AuthOptions {
  store: KeyStore;
  /** Which headers this route reads the key from. */
  accept: AuthHeaders;
  /** Key prefixes accepted (the key groups'), or a function read per request (config reload). Default `['sk-cs4-']`. */
  prefixes?: string[] | (() => string[]);
  /** Clock for rotated-secret expiry, epoch ms. */
  now?: () => number;
}

/**
 * Refuse a request that repeats a credential header. Node joins repeated `x-api-key` values with ", "
 * (which then fails as a key) but keeps only the first `Authorization`, so a second Bearer would be
 * silently ignored; both are refused the same way.
 * @param rawHeaders the request's headers as received, `IncomingMessage.rawHeaders` ([name, value, ...])
 * @throws GatewayError 401 naming the repeated header
 */
export function refuseRepeatedCredentials(rawHeaders: string[]): void {
  // Scanning the raw list allocates nothing; `req.headersDistinct` builds an object of arrays for
  // every header, on every request.
  let apiKeys = 0;
  let authorizations = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name.length === 9 && name.toLowerCase() === 'x-api-key') apiKeys += 1;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') authorizations += 1;
  }
  if (apiKeys > 1) throw errors.authentication('send exactly one x-api-key header');
  if (authorizations > 1) throw errors.authentication('send exactly one Authorization header');
}

/**
 * The key a request carries in the headers its route takes, or a 401 explaining which header to use.
 * @param route the route as the refusal names it, e.g. `POST /v1/responses`, or the request it is read
 *   from (only when the refusal is made: most requests never need it). Default `this route`.
 */
export function extractApiKey(headers: Record<string, string | string[] | undefined>, accept: AuthHeaders, route: string | RouteOf = 'this route'): string {
  const apiKeyHeader = headers['x-api-key'];
  if (Array.isArray(apiKeyHeader)) throw errors.authentication('send exactly one x-api-key header');
  const authorization = headers.authorization;
  const bearer = typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1] : undefined;
  if (accept === 'chat') {
    if (bearer) return bearer;
    if (apiKeyHeader) {
      throw errors.authentication(`${typeof route === 'string' ? route : formatRoute(route)} takes the key in the Authorization header, not x-api-key: "Authorization: Bearer <API_KEY>"`);
    }
    throw errors.authentication('missing API key: send "Authorization: Bearer <API_KEY>"');
  }
  if (apiKeyHeader) return apiKeyHeader;
  if (bearer) return bearer;
  throw errors.authentication('missing API key: send "x-api-key: <API_KEY>"');
}

/** What a request's route is read from: its method, mount path and matched route pattern. */
export interface RouteOf {
  method: string;
  baseUrl: string;
  path: string;
  route?: { path?: unknown };
}

/** `POST /v1/responses/{id}`: the method and the route pattern, parameters in braces. */
function formatRoute(req: RouteOf): string {
  return `${req.method} ${req.baseUrl}${String(req.route?.path ?? req.path).replace(/:(\w+)/g, '{$1}')}`;
}

export function createAuth(options: AuthOptions): RequestHandler {
  const readPrefixes = typeof options.prefixes === 'function' ? options.prefixes : () => (options.prefixes as string[] | undefined) ?? [DEFAULT_KEY_PREFIX];
  const now = options.now ?? Date.now;
  return async (req, res, next) => {
    try {
      refuseRepeatedCredentials(req.rawHeaders);
      const secret = extractApiKey(req.headers, options.accept, req);
      const prefixes = readPrefixes();
      if (!prefixes.some((prefix) => secret.startsWith(prefix))) {
        // Not which prefixes exist: that would tell a caller which key groups there are.
        throw errors.authentication('invalid API key');
      }
      const sha256 = hashSecret(secret);
      const ctx = getContext(res);
      const identify = async (fresh: boolean) => {
        const found = await options.store.identifyKey(sha256, now(), fresh);
        if (!found) throw errors.authentication('invalid API key');
        if (found.key.revoked) throw errors.authentication('this API key has been revoked');
        ctx.key = found.key;
        ctx.keyGroup = found.key.keyGroup;
        ctx.keyVersion = found.version;
      };
      await identify(false);
      ctx.secretSha256 = sha256;
      ctx.confirmKey = () => identify(true);
      next();
    } catch (err) {
      next(err);
    }
  };
}
