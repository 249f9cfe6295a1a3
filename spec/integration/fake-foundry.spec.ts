/**
 * The fake Foundry (spec/helpers/fake-foundry.ts) is first shown correct with Microsoft Foundry's official
 * client, @anthropic-ai/foundry-sdk: it takes what the client sends (API key, Entra ID token, the
 * `/anthropic` base URL, the deployment as model) and refuses what Foundry refuses.
 */
import { expect } from 'chai';
import { AnthropicFoundry } from '@anthropic-ai/foundry-sdk';
import { startFakeFoundry, type FakeFoundry } from '../helpers/fake-foundry';
import { createUpstreamClient } from '../../lib/upstream/client';
import { createFoundryProvider } from '../../lib/upstream/providers/foundry';
import { CloudCredentialError } from '../../lib/upstream/providers/provider';

describe('fake Foundry, shown with @anthropic-ai/foundry-sdk', function () {
  this.timeout(20_000);
  let fake: FakeFoundry;
  before(async () => {
    fake = await startFakeFoundry({ apiKey: 'foundry-key-1', token: 'entra-token-1', deployments: ['my-sonnet'] });
  });
  after(() => fake.close());

  const hello = { model: 'my-sonnet', max_tokens: 32, messages: [{ role: 'user' as const, content: 'Hi' }] };

  it('answers the official client with an API key (x-api-key) at <resource>/anthropic', async () => {
    const client = new AnthropicFoundry({ baseURL: `${fake.endpoint}/`, apiKey: 'foundry-key-1', maxRetries: 0 });
    const message = await client.messages.create(hello);
    expect(message.content[0]).to.include({ type: 'text' });
    expect(fake.accepted.at(-1)!.headers['x-api-key']).to.equal('foundry-key-1');
    expect(fake.accepted.at(-1)!.url).to.equal('/v1/messages');
  });

  it('answers the official client with a Microsoft Entra ID token (Authorization: Bearer)', async () => {
    const client = new AnthropicFoundry({ baseURL: `${fake.endpoint}/`, azureADTokenProvider: async () => 'entra-token-1', maxRetries: 0 });
    const stream = client.messages.stream(hello);
    const final = await stream.finalMessage();
    expect(final.content[0]).to.include({ type: 'text' });
    expect(fake.accepted.at(-1)!.headers.authorization).to.equal('Bearer entra-token-1');
  });

  it('refuses a wrong key (401), an unknown deployment (404) and a beta flag Foundry does not offer (400)', async () => {
    const wrong = new AnthropicFoundry({ baseURL: `${fake.endpoint}/`, apiKey: 'not-the-key', maxRetries: 0 });
    const denied = await wrong.messages.create(hello).catch((err) => err);
    expect(denied.status).to.equal(401);
    const client = new AnthropicFoundry({ baseURL: `${fake.endpoint}/`, apiKey: 'foundry-key-1', maxRetries: 0 });
    const missing = await client.messages.create({ ...hello, model: 'no-such-deployment' }).catch((err) => err);
    expect(missing.status).to.equal(404);
    expect(missing.error.error.code).to.equal('DeploymentNotFound');
    const beta = await client.beta.messages.create({ ...hello, betas: ['claude-code-20250219'] }).catch((err) => err);
    expect(beta.status).to.equal(400);
    expect(beta.error.error.message).to.include('claude-code-20250219');
  });

  it('takes the gateway\'s Foundry provider with a Microsoft Entra ID token, the deployment as model', async () => {
    const client = createUpstreamClient({
      targets: [{ id: 'foundry', url: fake.endpoint, provider: createFoundryProvider({ tokenProvider: async () => 'entra-token-1' }), modelIds: { 'model-sonnet-4.6': 'my-sonnet' } }],
      timeoutMs: 5000,
    });
    const body = Buffer.from(JSON.stringify({ ...hello, model: 'model-sonnet-4.6' }));
    const reply = await client.send({ path: '/v1/messages', headers: { 'anthropic-version': '2023-06-01' }, body }, undefined, { model: { id: 'model-sonnet-4.6' } });
    reply.response.resume();
    expect(reply.response.statusCode).to.equal(200);
    expect(fake.accepted.at(-1)!.headers.authorization).to.equal('Bearer entra-token-1');
    expect(fake.accepted.at(-1)!.body.model).to.equal('my-sonnet');
  });

  it("answers an Entra ID token that cannot be had with a fixed 502 naming the target; the library's message only in its log field", async () => {
    const sdkText = 'AADSTS700016: Application with identifier 0f1e2d3c was not found in the directory contoso-tenant';
    const client = createUpstreamClient({
      targets: [{ id: 'foundry-eu', url: fake.endpoint, provider: createFoundryProvider({ tokenProvider: async () => { throw new Error(sdkText); } }), modelIds: { 'model-sonnet-4.6': 'my-sonnet' } }],
      timeoutMs: 5000, maxRetries: 0,
    });
    const before = fake.accepted.length;
    const body = Buffer.from(JSON.stringify({ ...hello, model: 'model-sonnet-4.6' }));
    const err = await client.send({ path: '/v1/messages', headers: { 'anthropic-version': '2023-06-01' }, body }, undefined, { model: { id: 'model-sonnet-4.6' } }).catch((e) => e);
    expect([err.status, err.message]).to.deep.equal([502, 'upstream target "foundry-eu": its cloud credentials could not be obtained']);
    expect(err.log).to.deep.include({ message: 'cloud credentials could not be obtained', target: 'foundry-eu', provider: 'foundry', error: sdkText });
    expect(fake.accepted.length).to.equal(before);
    const provider = createFoundryProvider({ tokenProvider: async () => '' });
    const empty = await provider.prepare({ method: 'POST', path: '/v1/messages', headers: {}, body, stream: false }, 'my-sonnet', { url: new URL(fake.endpoint), basePath: '' }).catch((e) => e);
    expect(empty).to.be.instanceOf(CloudCredentialError);
  });
});
