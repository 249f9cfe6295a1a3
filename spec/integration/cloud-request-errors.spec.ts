/**
 * What the client and the log get when a cloud target's attempt cannot start (a gateway process, as
 * deployed, with the real cloud SDKs: cloud-gateway.ts):
 * - credentials the cloud SDK cannot obtain (google-auth-library given a key file that is not there,
 *   the AWS chain given a web identity token file that is not there): on every route a 502 in the
 *   route's own error shape naming only the target; the SDK's message, which names the file, the role
 *   and the account, only in one error line of the log per request;
 * - a request the gateway cannot build for the target (a body nested deeper than the provider's
 *   conversion can write): the client's 400, the target's health untouched past the breaker's threshold.
 */
import path from 'node:path';
import { expect } from 'chai';
import { ADMIN_TOKEN } from '../helpers/admin';
import { KEYS, startCloudFakes, startCloudGateway, type CloudFakes, type CloudGateway } from '../helpers/cloud-gateway';
import { tempDir } from '../helpers/temp-dir';

const MODEL = 'model-sonnet-4.6';
const CREDENTIALS_LOST = 'cloud credentials could not be obtained';

/** The gateway's JSON log lines (one object per line on stdout). */
function logLines(gw: CloudGateway): Array<Record<string, unknown>> {
  return gw.output().split('\n').flatMap((line) => {
    try {
      const parsed = JSON.parse(line);
      return parsed && typeof parsed === 'object' ? [parsed as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

/** POST `body` to `route` with the all-models key: status and parsed JSON body. */
async function post(gw: CloudGateway, route: string, body: unknown): Promise<{ status: number; text: string; json: any }> {
  const native = route.startsWith('/v1/messages');
  const headers: Record<string, string> = native
    ? { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }
    : { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' };
  const response = await fetch(`${gw.url}${route}`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, text, json: JSON.parse(text) };
}

describe('cloud targets: credentials that cannot be obtained, requests that cannot be built (gateway process)', function () {
  this.timeout(90_000);
  let fakes: CloudFakes;
  let gw: CloudGateway | undefined;

  before(async () => {
    fakes = await startCloudFakes();
  });
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });
  after(async () => fakes?.close());

  it("answers every route with a fixed 502 in its own shape naming the Vertex AI target; google-auth-library's message only in the log, once per request", async () => {
    const missing = path.join(tempDir('no-adc-'), 'sa-key-of-account-314159265358.json');
    gw = await startCloudGateway(fakes, [fakes.target('vertex', { id: 'vertex-east' })], {}, { GOOGLE_APPLICATION_CREDENTIALS: missing });
    const vertexBefore = fakes.vertex.requests.length;
    const ask = { model: MODEL, max_tokens: 32, messages: [{ role: 'user', content: 'Hello' }] };
    const replies = {
      native: await post(gw, '/v1/messages', ask),
      nativeStream: await post(gw, '/v1/messages', { ...ask, stream: true }),
      chat: await post(gw, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Hello' }] }),
      responses: await post(gw, '/v1/responses', { model: MODEL, input: 'Hello', store: false }),
    };
    const message = 'upstream target "vertex-east": its cloud credentials could not be obtained';
    for (const [route, reply] of Object.entries(replies)) {
      expect(reply.status, `${route}: ${reply.text}`).to.equal(502);
      expect(reply.text, route).not.to.include(missing).and.not.to.include('314159265358').and.not.to.include('does not exist');
    }
    // Each route's own error shape.
    for (const native of [replies.native, replies.nativeStream]) {
      expect(native.json).to.deep.include({ type: 'error', error: { type: 'api_error', message } });
      expect(native.json.request_id).to.be.a('string');
    }
    for (const chatShaped of [replies.chat, replies.responses]) {
      expect(chatShaped.json).to.deep.equal({ error: { message, type: 'server_error', param: null, code: 'upstream_error' } });
    }
    expect(fakes.vertex.requests.length, 'nothing reached Vertex AI').to.equal(vertexBefore);

    // The library's message: in one error line per request, and in no other line.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const lines = logLines(gw);
    const naming = lines.filter((line) => JSON.stringify(line).includes(missing));
    expect(naming).to.have.length(4);
    for (const line of naming) {
      expect(line).to.deep.include({ level: 'error', message: CREDENTIALS_LOST, target: 'vertex-east', provider: 'vertex' });
      expect(line.error).to.include(`The file at ${missing} does not exist`);
    }
    expect(new Set(naming.map((line) => line.request_id)).size, 'one line per request').to.equal(4);
  });

  it("answers a Bedrock target whose AWS credential chain fails with the same fixed 502; the chain's message (a token file) only in the log", async () => {
    const tokenFile = path.join(tempDir('no-web-identity-'), 'web-identity-token-of-271828182845');
    gw = await startCloudGateway(fakes, [fakes.target('bedrock', { id: 'bedrock-west' })], { maxRetries: 0 }, {
      AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: '',
      AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: 'arn:aws:iam::271828182845:role/gateway-bedrock-role',
    });
    const reply = await post(gw, '/v1/messages', { model: MODEL, max_tokens: 32, messages: [{ role: 'user', content: 'Hello' }] });
    expect(reply.status, reply.text).to.equal(502);
    expect(reply.json.error).to.deep.equal({ type: 'api_error', message: 'upstream target "bedrock-west": its cloud credentials could not be obtained' });
    expect(reply.text).not.to.include('271828182845').and.not.to.include('web-identity').and.not.to.include('ENOENT');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const naming = logLines(gw).filter((line) => JSON.stringify(line).includes(tokenFile));
    expect(naming).to.have.length(1);
    expect(naming[0]).to.deep.include({ level: 'error', message: CREDENTIALS_LOST, target: 'bedrock-west', provider: 'bedrock' });
  });

  it("answers requests Vertex AI's conversion cannot build with the client's 400, leaving the target healthy past the breaker's threshold", async () => {
    // Vertex serves the model alone (Bedrock only another one), so an open breaker would leave it no target.
    gw = await startCloudGateway(fakes, [fakes.target('vertex'), fakes.target('bedrock', { models: ['model-haiku-4.5'] })], { breakerThreshold: 2 });
    const before = { vertex: fakes.vertex.requests.length, bedrock: fakes.bedrock.records.length };
    // Valid JSON the gateway reads, nested deeper than the provider's JSON.stringify can write.
    const depth = 20_000;
    const deep = `{"model":"${MODEL}","max_tokens":32,"messages":[{"role":"user","content":"Hello"}],"deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    for (let i = 0; i < 4; i++) {
      const reply = await post(gw, '/v1/messages', deep);
      expect(reply.status, reply.text).to.equal(400);
      expect(reply.json.error).to.deep.equal({ type: 'invalid_request_error', message: 'the request cannot be sent to upstream target "vertex" (vertex): the request body is nested too deeply' });
    }
    expect([fakes.vertex.requests.length, fakes.bedrock.records.length], 'nothing sent').to.deep.equal([before.vertex, before.bedrock]);
    const upstreams = await (await fetch(`${gw.url}/admin/v1/upstreams`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json() as any;
    const vertex = upstreams.data.flatMap((group: any) => group.targets).find((target: any) => target.id === 'vertex');
    expect(vertex).to.deep.include({ state: 'healthy', consecutiveFailures: 0, failures: 0 });
    const valid = await post(gw, '/v1/messages', { model: MODEL, max_tokens: 32, messages: [{ role: 'user', content: 'Hello' }] });
    expect(valid.status, valid.text).to.equal(200);
    expect(fakes.vertex.requests.length).to.equal(before.vertex + 1);
  });
});
