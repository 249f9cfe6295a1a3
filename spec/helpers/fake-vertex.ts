/**
 * A fake Google Vertex AI on loopback, serving Claude's publisher-model methods, with a fake Google
 * OAuth 2 token endpoint beside it. The test makes a service-account key (createServiceAccount: an RSA
 * key pair of its own, a key file whose `token_uri` points at the endpoint); the endpoint verifies each
 * JWT bearer assertion's RS256 signature with that public key (jose) and issues access tokens; the fake
 * Vertex AI accepts only tokens it issued and has not seen expire. Each request is judged as Vertex AI
 * judges it (vertex-rules.ts, each rule citing its page), then as the native API judges the body
 * (api-rules.ts), then answered by a native FakeHandler (fake-upstream.ts's replies) with the model
 * named in the path.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { decodeJwt, importSPKI, jwtVerify } from 'jose';
import { listenOnLoopback } from '../../lib/http/loopback';
import { readBody, tryParseJson } from '../../lib/http/read-body';
import { createApiJudge } from './api-rules';
import { defaultHandler, writeBulk, type FakeHandler, type FakeReply, type RecordedRequest } from './fake-upstream';
import { GOOGLE_TOKEN_URL, googleError, judgeVertexRequest, parseVertexPath } from './vertex-rules';

export interface FakeVertexOptions {
  /** The project the fake serves (default `gateway-test`): another project's path is PERMISSION_DENIED. */
  projectId?: string;
  /** Vertex AI model ID -> the native model name the handler and api-rules.ts see (default: `claude-sonnet-4-6` -> `model-sonnet-4.6`). */
  models?: Record<string, string>;
  /** Seconds an access token lives (the token reply's `expires_in`; Google's: 3599). */
  tokenLifetimeSeconds?: number;
}

export interface FakeVertex {
  /** `http://127.0.0.1:<port>`: the Vertex AI origin (paths start with `/v1/projects/...`). */
  url: string;
  /** The token endpoint's URL (`<url>/token`), a service-account key file's `token_uri`. */
  tokenUri: string;
  projectId: string;
  /** Every prediction request as received (path, headers, body). */
  requests: RecordedRequest[];
  /** Access tokens issued so far. */
  tokensIssued: string[];
  /** Replace the native handler that answers an accepted request. */
  setHandler(handler: FakeHandler): void;
  /** Answer the next `count` prediction requests RESOURCE_EXHAUSTED (429), after the credential check. */
  exhaust(count: number): void;
  /** Trust a service account's public key (createServiceAccount calls it). */
  trustKey(clientEmail: string, publicKeyPem: string): void;
  close(): Promise<void>;
}

/** A service-account key file written for a fake Vertex AI. */
export interface ServiceAccount {
  keyFile: string;
  clientEmail: string;
  json: Record<string, string>;
}

/**
 * Write a service-account key file (the format of https://cloud.google.com/iam/docs/keys-create-delete,
 * `type: "service_account"`) with a fresh RSA key, its `token_uri` at `fake`'s token endpoint, and have
 * `fake` trust its public key.
 */
export function createServiceAccount(dir: string, fake: FakeVertex): ServiceAccount {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyId = crypto.randomBytes(20).toString('hex');
  const clientEmail = `gateway-test@${fake.projectId}.iam.gserviceaccount.com`;
  const json = {
    type: 'service_account', project_id: fake.projectId, private_key_id: keyId,
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: clientEmail, client_id: '100000000000000000001',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth', token_uri: fake.tokenUri,
    auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs', universe_domain: 'googleapis.com',
  };
  const keyFile = path.join(dir, `service-account-${keyId.slice(0, 8)}.json`);
  fs.writeFileSync(keyFile, JSON.stringify(json), { mode: 0o600 });
  fake.trustKey(clientEmail, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  return { keyFile, clientEmail, json };
}

/**
 * A GoogleAuth (google-auth-library) with the cloud-platform scope that finds `account`'s key file as
 * Application Default Credentials do in production (`GOOGLE_APPLICATION_CREDENTIALS`, set only while
 * the client is found), and whose HTTP client (gaxios) sends the token request to the key file's
 * `token_uri`. google-auth-library's service-account client posts to https://oauth2.googleapis.com/token
 * whatever the key file's `token_uri` says (its gtoken `getToken.js`); a request interceptor on its own
 * transporter moves that one URL, and nothing else changes: the JWT (its `aud` Google's token URL), the
 * form body, the caching and refresh are the library's.
 * @param clientOptions e.g. `eagerRefreshThresholdMillis` (the library's default: 5 minutes before expiry)
 */
export async function createTestGoogleAuth(account: ServiceAccount, clientOptions: { eagerRefreshThresholdMillis?: number } = {}): Promise<import('google-auth-library').GoogleAuth> {
  const { GoogleAuth } = require('google-auth-library') as typeof import('google-auth-library');
  const { Gaxios } = require('gaxios') as typeof import('gaxios');
  const transporter = new Gaxios();
  transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === GOOGLE_TOKEN_URL) options.url = new URL(account.json.token_uri);
      return options;
    },
  });
  const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
  process.env.GOOGLE_APPLICATION_CREDENTIALS = account.keyFile;
  try {
    const auth = new GoogleAuth({ scopes: 'https://www.googleapis.com/auth/cloud-platform', clientOptions: { transporter, ...clientOptions } });
    await auth.getClient();
    return auth;
  } finally {
    if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}

/** Write a native FakeReply as Vertex AI relays the model's reply (JSON, or SSE for streamRawPredict). */
async function writeReply(req: http.IncomingMessage, res: http.ServerResponse, reply: FakeReply): Promise<void> {
  if (reply.kind === 'hang') return;
  if (reply.kind === 'destroy') return void req.socket.destroy();
  if (reply.kind === 'text') {
    res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType });
    return void res.end(reply.text);
  }
  if (reply.kind === 'json') {
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    return void sendJson(res, reply.status ?? 200, reply.body);
  }
  res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream' });
  for (const item of reply.events) {
    if (res.destroyed) return;
    if ('pauseMs' in item) await new Promise((r) => setTimeout(r, item.pauseMs));
    else if ('until' in item) await item.until.catch(() => undefined);
    else if ('times' in item) await writeBulk(res, item);
    else if ('raw' in item) res.write(item.raw);
    else if ('event' in item) res.write(`event: ${item.event}\ndata: ${JSON.stringify(item.data)}\n\n`);
  }
  res.end();
  reply.onEnd?.();
}

/** Start a fake Vertex AI and its token endpoint on loopback. */
export async function startFakeVertex(options: FakeVertexOptions = {}): Promise<FakeVertex> {
  const projectId = options.projectId ?? 'gateway-test';
  const models = options.models ?? { 'claude-sonnet-4-6': 'model-sonnet-4.6' };
  const lifetime = options.tokenLifetimeSeconds ?? 3599;
  /** Public keys by service account email (google-auth-library's assertion has no `kid`: the `iss` names the account). */
  const keys = new Map<string, string[]>();
  const tokens = new Map<string, number>();
  const tokensIssued: string[] = [];
  const requests: RecordedRequest[] = [];
  const api = createApiJudge();
  let handler: FakeHandler = defaultHandler;
  let exhausted = 0;

  /**
   * The token endpoint, as https://developers.google.com/identity/protocols/oauth2/service-account#authorizingrequests
   * describes it: a form POST with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and the
   * signed JWT as `assertion`; the JWT is RS256, its `iss` the client email, its `aud` Google's token
   * URL, `scope` the scopes asked, `exp` at most an hour after `iat`. Errors are OAuth 2 ones
   * (RFC 6749 section 5.2: `invalid_grant`, `unsupported_grant_type`).
   */
  async function issueToken(raw: Buffer, res: http.ServerResponse): Promise<void> {
    const form = new URLSearchParams(raw.toString('utf8'));
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      return sendJson(res, 400, { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${form.get('grant_type') ?? ''}` });
    }
    const assertion = form.get('assertion') ?? '';
    let scope: unknown;
    try {
      const email = String(decodeJwt(assertion).iss ?? '');
      for (const pem of keys.get(email) ?? []) {
        const verified = await jwtVerify(assertion, await importSPKI(pem, 'RS256'), {
          algorithms: ['RS256'], issuer: email, audience: GOOGLE_TOKEN_URL, maxTokenAge: '1h',
        }).catch(() => undefined);
        if (verified) scope = verified.payload.scope ?? '';
      }
    } catch {
      // An assertion that is not a JWT: refused below as Google refuses a bad signature.
    }
    if (scope === undefined) return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
    if (!String(scope).split(' ').includes('https://www.googleapis.com/auth/cloud-platform')) {
      return sendJson(res, 400, { error: 'invalid_scope', error_description: 'Invalid OAuth scope or ID token audience provided.' });
    }
    const token = `ya29.fake-${crypto.randomBytes(24).toString('base64url')}`;
    tokens.set(token, Date.now() + lifetime * 1000);
    tokensIssued.push(token);
    sendJson(res, 200, { access_token: token, expires_in: lifetime, token_type: 'Bearer' });
  }

  const server = http.createServer((req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const url = req.url ?? '';
      if (req.method === 'POST' && url === '/token') return issueToken(raw, res);
      const text = raw.toString('utf8');
      const body: any = tryParseJson(text) ?? text;
      const recorded: RecordedRequest = { method: req.method ?? '', url, headers: req.headers, body, raw };
      requests.push(recorded);
      const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      const expiry = bearer === undefined ? undefined : tokens.get(bearer);
      const target = parseVertexPath(url);
      const verdict = judgeVertexRequest({ method: recorded.method, target, headers: req.headers, body, projectId, models, authenticated: expiry !== undefined && expiry > Date.now() });
      if (verdict) return sendJson(res, verdict.status, verdict.body);
      if (exhausted > 0) {
        exhausted--;
        const error = googleError(429, 'RESOURCE_EXHAUSTED', `Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-${target!.model}. Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.`);
        // A streaming method answers its error as a list (see vertex-rules.ts googleError).
        return sendJson(res, 429, target!.method === 'streamRawPredict' ? [error] : error);
      }
      const countTokens = target!.method === 'count-tokens';
      const { anthropic_version: _version, ...rest } = body as Record<string, unknown>;
      const nativeBody = { ...rest, model: models[countTokens ? String(body.model) : target!.model] };
      const nativeRaw = Buffer.from(JSON.stringify(nativeBody));
      const native: RecordedRequest = { method: 'POST', url: countTokens ? '/v1/messages/count_tokens' : '/v1/messages', headers: req.headers, body: nativeBody, raw: nativeRaw };
      const reply = api.judge(native) ?? handler(native);
      api.note(reply);
      await writeReply(req, res, reply);
    })().catch(() => res.destroy());
  });
  const { url, close } = await listenOnLoopback(server);
  return {
    url, tokenUri: `${url}/token`, projectId, requests, tokensIssued,
    setHandler(next) {
      handler = next;
    },
    exhaust(count) {
      exhausted = count;
    },
    trustKey(clientEmail, pem) {
      keys.set(clientEmail, [...(keys.get(clientEmail) ?? []), pem]);
    },
    close,
  };
}
