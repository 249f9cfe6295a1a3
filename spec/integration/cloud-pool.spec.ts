/**
 * The upstream client over a pool of first-party and cloud targets, with providers stubbed in the test
 * (the Bedrock and Vertex modules are built apart; a stub stands for the cloud's request signing only:
 * the capabilities table, the choice of target, failover and the error mapping are the real ones).
 */
import { expect } from 'chai';
import { createUpstreamClient, type UpstreamClient } from '../../lib/upstream/client';
import { obtainCredentials, type ProviderName, type TargetProvider } from '../../lib/upstream/providers/provider';
import type { UpstreamRoute } from '../../lib/upstream/target-choice';
import { GatewayError } from '../../lib/http/errors';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';

/**
 * A provider that sends the native request unchanged (model renamed in a header), fails to get
 * credentials (`fail`: the SDK's message), or refuses to build a request whose body holds `refuse`.
 */
function stubProvider(name: ProviderName, fail?: string, refuse?: string): TargetProvider {
  return {
    name,
    async prepare(request, modelId) {
      if (refuse && request.body?.includes(refuse)) throw new SyntaxError(`cannot convert ${refuse}`);
      if (fail) await obtainCredentials(name, () => Promise.reject(new Error(fail)));
      return { method: request.method, path: request.path, headers: { ...request.headers, 'x-stub-model': modelId }, body: request.body };
    },
    adaptReply: (response) => response,
  };
}

const route = (): UpstreamRoute => ({ model: { id: 'model-sonnet-4.6' } });
const body = (extra: object = {}) => Buffer.from(JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...extra }));

describe('upstream client: a pool across providers', function () {
  this.timeout(20_000);
  let firstParty: FakeUpstream;
  let cloud: FakeUpstream;
  before(async () => {
    firstParty = await startFakeUpstream();
    cloud = await startFakeUpstream();
  });
  after(async () => {
    await firstParty.close();
    await cloud.close();
  });

  const pool = (provider: TargetProvider, cloudWeight = 100): UpstreamClient => createUpstreamClient({
    targets: [
      { id: 'first-party', url: firstParty.url, apiKeys: ['fp-key'] },
      { id: 'cloud', url: cloud.url, weight: cloudWeight, provider, modelIds: { 'model-sonnet-4.6': 'cloud-sonnet-id' } },
    ],
    timeoutMs: 5000, retryBaseDelayMs: 5,
  });

  it('sends a request naming a file_id only to the first-party target when the cloud has no Files API', async () => {
    const client = pool(stubProvider('bedrock'));
    const before = cloud.requests.length;
    for (let i = 0; i < 5; i++) {
      const withFile = body({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }] }] });
      const reply = await client.send({ path: '/v1/messages', headers: { 'anthropic-version': '2023-06-01' }, body: withFile }, undefined, route());
      expect(reply.target).to.equal('first-party');
      reply.response.resume();
    }
    expect(cloud.requests.length).to.equal(before);
  });

  it('refuses with a 400 naming the feature and the targets when none offers it', async () => {
    const client = createUpstreamClient({
      targets: [{ id: 'vertex-east', url: cloud.url, provider: stubProvider('vertex'), modelIds: { 'model-sonnet-4.6': 'claude-sonnet' } }],
      timeoutMs: 5000,
    });
    const err = await client.send({ path: '/v1/messages/batches', headers: {}, body: Buffer.from('{"requests":[]}') }, undefined, {}).catch((e) => e);
    expect(err).to.be.instanceOf(GatewayError);
    expect(err.status).to.equal(400);
    expect(err.message).to.include('batches').and.include('"vertex-east" (vertex');
  });

  it('drops what Vertex refuses (betas off its list, output_config) and reports it on the reply; the model is the target\'s', async () => {
    const client = createUpstreamClient({
      targets: [{ id: 'vertex-east', url: cloud.url, provider: stubProvider('vertex'), modelIds: { 'model-sonnet-4.6': 'claude-sonnet' } }],
      timeoutMs: 5000,
    });
    const headers = { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14' };
    const reply = await client.send({ path: '/v1/messages', headers, body: body({ output_config: { effort: 'high' } }) }, undefined, route());
    reply.response.resume();
    expect(reply.dropped).to.deep.equal(['claude-code-20250219', 'output_config']);
    const seen = cloud.requests.at(-1)!;
    expect(seen.headers['anthropic-beta']).to.equal('interleaved-thinking-2025-05-14');
    expect(seen.headers['x-stub-model']).to.equal('claude-sonnet');
    expect(seen.body).to.not.have.property('output_config');
  });

  it('fails over to the first-party target when the cloud\'s credentials cannot be had (nothing was sent)', async () => {
    const client = pool(stubProvider('bedrock', 'no AWS credentials in the chain'));
    const before = cloud.requests.length;
    const reply = await client.send({ path: '/v1/messages', headers: {}, body: body() }, undefined, route());
    reply.response.resume();
    expect(reply.target).to.equal('first-party');
    expect(cloud.requests.length).to.equal(before);
    const alone = createUpstreamClient({ targets: [{ id: 'b', url: cloud.url, provider: stubProvider('bedrock', 'no AWS credentials in the chain'), modelIds: { 'model-sonnet-4.6': 'x' } }], timeoutMs: 5000, maxRetries: 0 });
    const err = await alone.send({ path: '/v1/messages', headers: {}, body: body() }, undefined, route()).catch((e) => e);
    expect(err.status).to.equal(502);
    // The client's message names the target only; the SDK's goes to the operator's log line.
    expect(err.message).to.equal('upstream target "b": its cloud credentials could not be obtained');
    expect(err.log).to.deep.include({ target: 'b', provider: 'bedrock', error: 'no AWS credentials in the chain' });
    expect(alone.describeTargets()[0].consecutiveFailures, 'a credential failure is the target\'s').to.equal(1);
  });

  it('answers a request the cloud target cannot be built for with a 400, leaving its health alone (past the breaker\'s threshold)', async () => {
    const client = createUpstreamClient({
      targets: [
        { id: 'vertex-east', url: cloud.url, provider: stubProvider('vertex', undefined, 'unbuildable'), modelIds: { 'model-sonnet-4.6': 'claude-sonnet' } },
        { id: 'other', url: firstParty.url, apiKeys: ['fp-key'], models: ['model-haiku-4.5'] },
      ],
      timeoutMs: 5000, retryBaseDelayMs: 5, breakerThreshold: 2,
    });
    const before = { cloud: cloud.requests.length, firstParty: firstParty.requests.length };
    for (let i = 0; i < 5; i++) {
      const err = await client.send({ path: '/v1/messages', headers: {}, body: body({ metadata: { note: 'unbuildable' } }) }, undefined, route()).catch((e) => e);
      expect(err).to.be.instanceOf(GatewayError);
      expect([err.status, err.nativeType]).to.deep.equal([400, 'invalid_request_error']);
      expect(err.message).to.include('"vertex-east" (vertex)').and.include('cannot convert unbuildable');
    }
    expect([cloud.requests.length, firstParty.requests.length], 'nothing sent anywhere').to.deep.equal([before.cloud, before.firstParty]);
    expect(client.describeTargets()[0]).to.deep.include({ state: 'healthy', consecutiveFailures: 0 });
    const reply = await client.send({ path: '/v1/messages', headers: {}, body: body() }, undefined, route());
    reply.response.resume();
    expect([reply.target, reply.response.statusCode]).to.deep.equal(['vertex-east', 200]);
  });

  it('counts Bedrock\'s ThrottlingException as a 429 and moves the request before the first byte', async () => {
    cloud.setHandler(() => ({ kind: 'json', status: 400, headers: { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' }, body: { message: 'Too many requests' } }));
    try {
      const client = pool(stubProvider('bedrock'));
      const reply = await client.send({ path: '/v1/messages', headers: {}, body: body() }, undefined, route());
      reply.response.resume();
      expect(reply.target).to.equal('first-party');
      expect(client.describeTargets()[1]).to.include({ failures: 1, failovers: 1 });
      // The admin API's GET /upstreams shows which cloud each target is on.
      expect(client.describeTargets().map((target) => target.provider)).to.deep.equal(['anthropic', 'bedrock']);
    } finally {
      cloud.setHandler((request) => (require('../helpers/fake-upstream') as typeof import('../helpers/fake-upstream')).defaultHandler(request));
    }
  });
});
