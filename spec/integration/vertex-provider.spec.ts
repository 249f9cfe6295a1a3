/**
 * The fake Vertex AI (spec/helpers/fake-vertex.ts), first shown correct with the official client
 * (@anthropic-ai/vertex-sdk with a GoogleAuth reading a service-account key the test made), then the
 * gateway's Vertex AI provider (lib/upstream/providers/vertex.ts) against it: prepare, send with
 * node:http, adaptReply; replies compared with the first-party fake's for the same request.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { expect } from 'chai';
import AnthropicVertex from '@anthropic-ai/vertex-sdk';
import { CloudCredentialError, type NativeUpstreamRequest, type TargetProvider } from '../../lib/upstream/providers/provider';
import { createVertexProvider } from '../../lib/upstream/providers/vertex';
import { createServiceAccount, createTestGoogleAuth, startFakeVertex, type FakeVertex, type ServiceAccount } from '../helpers/fake-vertex';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { tempDir } from '../helpers/temp-dir';

const MODEL = 'claude-sonnet-4-6';
const ASK = { max_tokens: 32, messages: [{ role: 'user' as const, content: 'Hi' }] };

interface Reply { status: number; headers: http.IncomingHttpHeaders; body: Buffer }

/** Read a reply (or an adapted one) to its end. */
function readReply(response: http.IncomingMessage): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    response.on('error', reject);
  });
}

/** One POST on loopback; `adapt` turns the raw reply into what the routes read. */
function post(origin: string, pathname: string, headers: Record<string, string>, body: Buffer, adapt = (r: http.IncomingMessage) => r): Promise<Reply> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname: url.hostname, port: url.port, method: 'POST', path: pathname, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      readReply(adapt(res)).then(resolve, reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function nativeRequest(body: Record<string, unknown>, pathname = '/v1/messages', headers: Record<string, string> = {}): NativeUpstreamRequest {
  return { method: 'POST', path: pathname, headers: { 'anthropic-version': '2023-06-01', ...headers }, body: Buffer.from(JSON.stringify(body)), stream: body.stream === true };
}

/** The provider's way: prepare, send to the fake, adapt the reply. */
async function sendThrough(provider: TargetProvider, fake: FakeVertex, request: NativeUpstreamRequest, modelId = MODEL): Promise<Reply> {
  const prepared = await provider.prepare(request, modelId, { url: new URL(fake.url), basePath: '' });
  return post(fake.url, prepared.path, prepared.headers, prepared.body!, (response) => provider.adaptReply(response, request));
}

describe('integration: fake Vertex AI and the Vertex AI provider', function () {
  this.timeout(30_000);
  let fake: FakeVertex;
  let firstParty: FakeUpstream;
  let account: ServiceAccount;
  let dir: string;
  before(async () => {
    dir = tempDir('vertex-');
    fake = await startFakeVertex({ models: { [MODEL]: 'model-sonnet-4.6' } });
    firstParty = await startFakeUpstream();
    account = createServiceAccount(dir, fake);
  });
  after(async () => {
    await fake.close();
    await firstParty.close();
  });
  beforeEach(() => {
    fake.requests.length = 0;
  });

  describe('the fake, with the official client', () => {
    let client: AnthropicVertex;
    before(async () => {
      client = new AnthropicVertex({
        baseURL: `${fake.url}/v1`, region: 'us-east5', projectId: fake.projectId, maxRetries: 0,
        googleAuth: (await createTestGoogleAuth(account)) as never,
        // Stock: SDK 1.1.3 copies its `anthropic-version` header (a first-party version) into the body's
        // `anthropic_version` (client.ts #adaptRequest), which the fake takes as Vertex AI does.
      });
    });

    it('answers a whole message, the token from the token endpoint', async () => {
      const before = fake.tokensIssued.length;
      const message = await client.messages.create({ model: MODEL, ...ASK });
      expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello, world' }]);
      expect(fake.requests[0].url).to.equal(`/v1/projects/${fake.projectId}/locations/us-east5/publishers/anthropic/models/${MODEL}:rawPredict`);
      expect(fake.requests[0].body).to.not.have.property('model');
      expect(fake.requests[0].headers.authorization).to.equal(`Bearer ${fake.tokensIssued.at(-1)}`);
      expect(fake.tokensIssued.length).to.be.at.most(before + 1);
    });

    it('streams a message from :streamRawPredict', async () => {
      const stream = client.messages.stream({ model: MODEL, ...ASK });
      const message = await stream.finalMessage();
      expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello, world' }]);
      expect(fake.requests[0].url).to.match(/:streamRawPredict$/);
    });

    it('counts tokens at count-tokens:rawPredict, the model in the body', async () => {
      const counted = await client.messages.countTokens({ model: MODEL, messages: ASK.messages });
      expect(counted.input_tokens).to.equal(42);
      expect(fake.requests[0].url).to.match(/\/models\/count-tokens:rawPredict$/);
      expect(fake.requests[0].body.model).to.equal(MODEL);
    });

    it('refuses a token it did not issue, in Google\'s words', async () => {
      const forged = new AnthropicVertex({
        baseURL: `${fake.url}/v1`, region: 'us-east5', projectId: fake.projectId, maxRetries: 0,
        authClient: { getRequestHeaders: async () => new Headers({ authorization: 'Bearer ya29.forged' }) } as never,
      });
      const error = await forged.messages.create({ model: MODEL, ...ASK }).then(() => null, (e: any) => e);
      expect(error?.status).to.equal(401);
      expect(error.error.error).to.include({ code: 401, status: 'UNAUTHENTICATED' });
      expect(error.error.error.message).to.match(/^Request had invalid authentication credentials\. Expected OAuth 2 access token/);
    });

    it('issues no token for an assertion signed by a key it does not trust', async () => {
      const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const keyFile = path.join(dir, 'untrusted.json');
      fs.writeFileSync(keyFile, JSON.stringify({ ...account.json, private_key: other }));
      const issued = fake.tokensIssued.length;
      const error = await (await createTestGoogleAuth({ ...account, keyFile })).getAccessToken().then(() => null, (e: Error) => e);
      expect(error?.message).to.include('invalid_grant');
      expect(fake.tokensIssued.length).to.equal(issued);
    });

    it('refuses what Vertex AI refuses: a beta off its list, a field it does not take, an unknown model', async () => {
      const beta = await client.messages.create({ model: MODEL, ...ASK }, { headers: { 'anthropic-beta': 'effort-2025-11-24' } }).then(() => null, (e: any) => e);
      expect(beta?.status).to.equal(400);
      expect(beta.error.error.message).to.match(/^Unexpected value\(s\) `effort-2025-11-24` for the `anthropic-beta` header/);
      const field = await client.messages.create({ model: MODEL, ...ASK, output_config: { effort: 'low' } } as never).then(() => null, (e: any) => e);
      expect(field?.status).to.equal(400);
      expect(field.error.error.message).to.equal('output_config: Extra inputs are not permitted');
      const model = await client.messages.create({ model: 'claude-unknown', ...ASK }).then(() => null, (e: any) => e);
      expect(model?.status).to.equal(404);
      expect(model.error.error.status).to.equal('NOT_FOUND');
      const accepted = await client.messages.create({ model: MODEL, ...ASK }, { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } });
      expect(accepted.type).to.equal('message');
    });

    it('refuses a body with model or without anthropic_version (requests the official client never sends)', async () => {
      const token = await (await createTestGoogleAuth(account)).getAccessToken();
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const at = `/v1/projects/${fake.projectId}/locations/us-east5/publishers/anthropic/models/${MODEL}:rawPredict`;
      const withModel = await post(fake.url, at, headers, Buffer.from(JSON.stringify({ model: MODEL, anthropic_version: 'vertex-2023-10-16', ...ASK })));
      expect([withModel.status, JSON.parse(withModel.body.toString()).error.message]).to.deep.equal([400, 'model: Extra inputs are not permitted']);
      const without = await post(fake.url, at, headers, Buffer.from(JSON.stringify(ASK)));
      expect([without.status, JSON.parse(without.body.toString()).error.message]).to.deep.equal([400, 'anthropic_version: Field required']);
      const wrong = await post(fake.url, at, headers, Buffer.from(JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', ...ASK })));
      expect([wrong.status, JSON.parse(wrong.body.toString()).error.message]).to.deep.equal([400, "anthropic_version: Input should be 'vertex-2023-10-16'"]);
    });
  });

  describe('the provider module', () => {
    let provider: TargetProvider;
    before(async () => {
      provider = createVertexProvider({ projectId: fake.projectId, region: 'us-east5', authClient: await createTestGoogleAuth(account) });
    });

    it('gives a whole reply equal to the first-party one, and sends what Vertex AI takes', async () => {
      const request = nativeRequest({ model: 'model-sonnet-4.6', ...ASK }, '/v1/messages', { 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
      const reply = await sendThrough(provider, fake, request);
      const direct = await post(firstParty.url, '/v1/messages', { 'content-type': 'application/json' }, request.body!);
      expect(reply.status).to.equal(200);
      expect(JSON.parse(reply.body.toString())).to.deep.equal(JSON.parse(direct.body.toString()));
      const sent = fake.requests[0];
      expect(sent.body).to.deep.equal({ ...ASK, anthropic_version: 'vertex-2023-10-16' });
      expect(sent.headers['anthropic-beta']).to.equal('interleaved-thinking-2025-05-14');
      expect(sent.headers).to.not.have.property('anthropic-version');
    });

    it('relays a stream byte for byte as the first-party API sends it', async () => {
      const request = nativeRequest({ model: 'model-sonnet-4.6', ...ASK, stream: true });
      const reply = await sendThrough(provider, fake, request);
      const direct = await post(firstParty.url, '/v1/messages', { 'content-type': 'application/json' }, request.body!);
      expect(reply.status).to.equal(200);
      expect(reply.headers['content-type']).to.equal('text/event-stream');
      expect(reply.body.toString()).to.equal(direct.body.toString()).and.include('event: message_stop');
      expect(fake.requests[0].url).to.match(/:streamRawPredict$/);
    });

    it('counts tokens', async () => {
      const reply = await sendThrough(provider, fake, nativeRequest({ model: 'model-sonnet-4.6', messages: ASK.messages }, '/v1/messages/count_tokens'));
      expect([reply.status, JSON.parse(reply.body.toString())]).to.deep.equal([200, { input_tokens: 42 }]);
    });

    it('serves the global region', async () => {
      const global = createVertexProvider({ projectId: fake.projectId, region: 'global', authClient: await createTestGoogleAuth(account) });
      const reply = await sendThrough(global, fake, nativeRequest({ model: 'model-sonnet-4.6', ...ASK }));
      expect(reply.status).to.equal(200);
      expect(fake.requests[0].url).to.equal(`/v1/projects/${fake.projectId}/locations/global/publishers/anthropic/models/${MODEL}:rawPredict`);
    });

    it('answers RESOURCE_EXHAUSTED as a native 429 rate_limit_error with Google\'s words, whole and streamed', async () => {
      for (const stream of [false, true]) {
        fake.exhaust(1);
        const reply = await sendThrough(provider, fake, nativeRequest({ model: 'model-sonnet-4.6', ...ASK, stream }));
        const body = JSON.parse(reply.body.toString());
        expect(reply.status).to.equal(429);
        expect(body.type).to.equal('error');
        expect(body.error.type).to.equal('rate_limit_error');
        expect(body.error.message).to.match(/^Quota exceeded for aiplatform\.googleapis\.com\/online_prediction_requests_per_base_model/);
        expect(reply.headers['content-length']).to.equal(String(reply.body.length));
      }
    });

    it('maps the other Google errors and passes the native ones unchanged', async () => {
      const forged = createVertexProvider({ projectId: fake.projectId, region: 'us-east5', authClient: { getRequestHeaders: async () => new Headers({ authorization: 'Bearer ya29.forged' }) } });
      const unauthenticated = await sendThrough(forged, fake, nativeRequest({ model: 'm', ...ASK }));
      expect([unauthenticated.status, JSON.parse(unauthenticated.body.toString()).error.type]).to.deep.equal([401, 'authentication_error']);
      expect(JSON.parse(unauthenticated.body.toString()).error.message).to.match(/^Request had invalid authentication credentials/);
      const unknown = await sendThrough(provider, fake, nativeRequest({ model: 'm', ...ASK }), 'claude-unknown');
      expect([unknown.status, JSON.parse(unknown.body.toString()).error]).to.deep.equal([404, { type: 'not_found_error', message: `Publisher Model \`projects/${fake.projectId}/locations/us-east5/publishers/anthropic/models/claude-unknown\` not found.` }]);
      const elsewhere = createVertexProvider({ projectId: 'someone-else', region: 'us-east5', authClient: await createTestGoogleAuth(account) });
      const denied = await sendThrough(elsewhere, fake, nativeRequest({ model: 'm', ...ASK }));
      expect([denied.status, JSON.parse(denied.body.toString()).error.type]).to.deep.equal([403, 'permission_error']);
      const beta = await sendThrough(provider, fake, nativeRequest({ model: 'm', ...ASK }, '/v1/messages', { 'anthropic-beta': 'prompt-caching-scope-2026-01-05' }));
      const native = JSON.parse(beta.body.toString());
      expect(beta.status).to.equal(400);
      expect(native.request_id).to.match(/^req_vrtx_/);
      expect(native.error).to.deep.equal({ type: 'invalid_request_error', message: 'Unexpected value(s) `prompt-caching-scope-2026-01-05` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.' });
    });

    it('refreshes the token when it expires (cached until then)', async () => {
      const shortLived = await startFakeVertex({ models: { [MODEL]: 'model-sonnet-4.6' }, tokenLifetimeSeconds: 2 });
      try {
        const refreshing = createVertexProvider({
          projectId: shortLived.projectId, region: 'us-east5',
          authClient: await createTestGoogleAuth(createServiceAccount(dir, shortLived), { eagerRefreshThresholdMillis: 500 }),
        });
        const ask = () => sendThrough(refreshing, shortLived, nativeRequest({ model: 'model-sonnet-4.6', ...ASK }));
        expect((await ask()).status).to.equal(200);
        expect((await ask()).status).to.equal(200);
        expect(shortLived.tokensIssued).to.have.length(1);
        await new Promise((r) => setTimeout(r, 2100));
        const stale = await post(shortLived.url, shortLived.requests[0].url, { authorization: `Bearer ${shortLived.tokensIssued[0]}`, 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ anthropic_version: 'vertex-2023-10-16', ...ASK })));
        expect(stale.status).to.equal(401);
        expect((await ask()).status).to.equal(200);
        expect(shortLived.tokensIssued).to.have.length(2);
        expect(shortLived.requests.at(-1)!.headers.authorization).to.equal(`Bearer ${shortLived.tokensIssued[1]}`);
      } finally {
        await shortLived.close();
      }
    });

    it('loads google-auth-library only when a Vertex AI target without an authClient is created', () => {
      const module = path.resolve(__dirname, '../../lib/upstream/providers/vertex.js');
      const probe = `const m = require(${JSON.stringify(module)}); const loaded = () => Object.keys(require.cache).some((k) => k.includes('google-auth-library'));`
        + ' const before = loaded(); m.createVertexProvider({ projectId: "p", region: "us-east5" }); console.log(JSON.stringify([before, loaded()]));';
      expect(JSON.parse(execFileSync(process.execPath, ['-e', probe], { encoding: 'utf8' }))).to.deep.equal([false, true]);
    });

    it('rejects prepare when Application Default Credentials cannot be found (nothing is sent)', async () => {
      const saved = process.env.GOOGLE_APPLICATION_CREDENTIALS;
      process.env.GOOGLE_APPLICATION_CREDENTIALS = path.join(dir, 'missing.json');
      try {
        const adc = createVertexProvider({ projectId: fake.projectId, region: 'us-east5' });
        const error = await adc.prepare(nativeRequest({ model: 'm', ...ASK }), MODEL, { url: new URL(fake.url), basePath: '' }).then(() => null, (e: Error) => e);
        expect(error).to.be.instanceOf(CloudCredentialError);
        expect((error as CloudCredentialError).detail).to.include('missing.json');
        expect(fake.requests).to.have.length(0);
      } finally {
        if (saved === undefined) delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
        else process.env.GOOGLE_APPLICATION_CREDENTIALS = saved;
      }
    });
  });
});
