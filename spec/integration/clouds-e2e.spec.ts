/**
 * Issue 43, "Done when": one gateway process (as deployed: dist/lib/server.js, its config file and env)
 * whose pool holds an Amazon Bedrock, a Google Vertex AI and a Microsoft Foundry target, each `url` a
 * local fake that checks what its cloud checks (cloud-gateway.ts: SigV4 recomputed with the AWS SDK's
 * signer, OAuth tokens issued by a local token endpoint and fetched by google-auth-library through an
 * HTTPS proxy, the Foundry key). Driven with the official clients (@anthropic-ai/sdk, openai): native
 * whole and streamed replies, chat-completions, Responses and count_tokens through each target; the
 * key's usage (admin API) equals the usage the fakes reported; a Bedrock ThrottlingException moves the
 * request to another cloud before the first byte; a session stays on its target; a request with a
 * `file_id` goes to the first-party target only.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { priceUsage } from '../../lib/billing/pricing';
import type { ModelConfig } from '../../lib/config/types';
import { emptyUsage } from '../../lib/pipeline/context';
import { createAgentUpstream, TEXT_PIECES, type ReportedUsage } from '../helpers/agent-upstream';
import { BEDROCK_API_KEY, KEYS, startCloudFakes, startCloudGateway, type CloudFakes, type CloudGateway } from '../helpers/cloud-gateway';
import { THROTTLED } from '../helpers/fake-bedrock';
import { createFakeFiles } from '../helpers/fake-files';
import { createServiceAccount } from '../helpers/fake-vertex';
import { tempDir } from '../helpers/temp-dir';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';

const MODEL = 'model-sonnet-4.6';
const FILES_BETA = 'files-api-2025-04-14';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const CATALOGUE: ModelConfig[] = require('../../../config.json').models;
const TEXT = TEXT_PIECES.join('');
const ask = { model: MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Hello' }] };

/** Requests each fake admitted past its credential check, by cloud (prediction calls only). */
function served(fakes: CloudFakes): Record<'bedrock' | 'vertex' | 'foundry', number> {
  return {
    bedrock: fakes.bedrock.records.filter((r) => /\/(invoke|invoke-with-response-stream|count-tokens)$/.test(r.url)).length,
    vertex: fakes.vertex.requests.length,
    foundry: fakes.foundry.accepted.length,
  };
}

const sum = (usage: ReportedUsage[], field: 'input_tokens' | 'output_tokens') => usage.reduce((total, u) => total + u[field], 0);

describe('clouds end to end: Bedrock, Vertex AI and Foundry targets in one pool (gateway process)', function () {
  this.timeout(90_000);
  const agent = createAgentUpstream();
  let fakes: CloudFakes;
  let gw: CloudGateway | undefined;

  before(async () => {
    fakes = await startCloudFakes(agent.handler);
  });
  afterEach(async () => {
    await gw?.stop();
    gw = undefined;
  });
  after(async () => fakes?.close());

  const anthropic = () => new Anthropic({ apiKey: KEYS.all, baseURL: gw!.url, maxRetries: 0 });
  /** Stream `ask` through the Anthropic SDK: the text of its `text` events, and its final message. */
  const streamAsk = async () => {
    const stream = anthropic().messages.stream(ask);
    const deltas: string[] = [];
    stream.on('text', (text) => deltas.push(text));
    const final = await stream.finalMessage();
    return { text: deltas.join(''), final };
  };
  const openai = () => new OpenAI({ apiKey: KEYS.all, baseURL: `${gw!.url}/v1`, maxRetries: 0 });

  it('serves every route through each cloud and bills the usage each reported', async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock'), fakes.target('vertex'), fakes.target('foundry')]);
    const before = served(fakes);
    const reportedBefore = agent.reported.length;
    // Equal weights: smooth weighted round-robin sends each three requests in a row to the three targets.
    for (let i = 0; i < 3; i++) {
      const whole = await anthropic().messages.create(ask);
      expect(whole.content).to.deep.equal([{ type: 'text', text: TEXT }]);
    }
    for (let i = 0; i < 3; i++) {
      const { text, final } = await streamAsk();
      expect(text).to.equal(TEXT);
      expect(final.usage.output_tokens).to.be.greaterThan(1);
    }
    for (let i = 0; i < 3; i++) {
      const chat = await openai().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }] });
      expect(chat.choices[0].message.content).to.equal(TEXT);
    }
    for (let i = 0; i < 3; i++) {
      const chunks: string[] = [];
      for await (const chunk of await openai().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }], stream: true })) {
        chunks.push(chunk.choices[0]?.delta?.content ?? '');
      }
      expect(chunks.join('')).to.equal(TEXT);
    }
    for (let i = 0; i < 3; i++) {
      const response = await openai().responses.create({ model: MODEL, input: 'Hello', store: false });
      expect(response.output_text).to.equal(TEXT);
    }
    for (let i = 0; i < 3; i++) {
      const counted = await anthropic().messages.countTokens({ model: MODEL, messages: ask.messages });
      expect(counted.input_tokens).to.be.a('number').greaterThan(0);
    }
    const after = served(fakes);
    // Six routes, each served once by each cloud.
    expect({ bedrock: after.bedrock - before.bedrock, vertex: after.vertex - before.vertex, foundry: after.foundry - before.foundry })
      .to.deep.equal({ bedrock: 6, vertex: 6, foundry: 6 });
    // Every signature and token was accepted: no refusal reached a client (each call above succeeded),
    // and Vertex AI's tokens came from the token endpoint through the proxy.
    expect(fakes.vertex.tokensIssued.length).to.be.at.least(1);
    expect(fakes.tokenProxy.tunnelled.length).to.be.at.least(1);
    expect(fakes.tokenProxy.refused).to.deep.equal([]);

    const reported = agent.reported.slice(reportedBefore);
    expect(reported).to.have.length(15);
    const usage = await gw.usage(15);
    expect({ requests: usage.requests, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens })
      .to.deep.equal({ requests: 15, inputTokens: sum(reported, 'input_tokens'), outputTokens: sum(reported, 'output_tokens') });
    // No credential of any target in the gateway's output.
    for (const secret of [fakes.env.AWS_SECRET_ACCESS_KEY, fakes.env.FOUNDRY_API_KEY, ...fakes.vertex.tokensIssued]) expect(gw.output()).not.to.include(secret);
  });

  it('moves a request off a throttled Bedrock target (ThrottlingException) to another cloud before the first byte', async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock'), fakes.target('vertex'), fakes.target('foundry')]);
    fakes.bedrock.setScript(() => THROTTLED);
    try {
      const bedrockBefore = fakes.bedrock.records.length;
      const before = served(fakes);
      const reportedBefore = agent.reported.length;
      for (let i = 0; i < 3; i++) {
        // Streamed: the client reads a clean stream, nothing of the 429 (it came before the first byte).
        expect((await streamAsk()).text).to.equal(TEXT);
      }
      const after = served(fakes);
      // The first request tried Bedrock first (config order breaks the tie), was throttled once, and moved;
      // Bedrock then cools down and the others take the traffic.
      expect(fakes.bedrock.records.length - bedrockBefore, 'attempts on Bedrock').to.equal(1);
      expect(after.vertex - before.vertex + after.foundry - before.foundry).to.equal(3);
      const reported = agent.reported.slice(reportedBefore);
      const usage = await gw.usage(3);
      expect([usage.requests, usage.inputTokens, usage.outputTokens]).to.deep.equal([3, sum(reported, 'input_tokens'), sum(reported, 'output_tokens')]);
    } finally {
      fakes.setHandler(agent.handler);
    }
  });

  it("keeps a session (Claude Code's x-claude-code-session-id) on its target while other traffic rotates", async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock'), fakes.target('vertex'), fakes.target('foundry')]);
    const session = 'c0ffee00-0000-4000-8000-000000000043';
    const sessionClient = new Anthropic({ apiKey: KEYS.all, baseURL: gw.url, maxRetries: 0, defaultHeaders: { 'x-claude-code-session-id': session } });
    const seen: Array<'bedrock' | 'vertex' | 'foundry'> = [];
    const others = new Set<string>();
    for (let i = 0; i < 4; i++) {
      let before = served(fakes);
      await sessionClient.messages.create(ask);
      let after = served(fakes);
      seen.push((['bedrock', 'vertex', 'foundry'] as const).find((cloud) => after[cloud] > before[cloud])!);
      before = after;
      await anthropic().messages.create(ask);
      after = served(fakes);
      others.add((['bedrock', 'vertex', 'foundry'] as const).find((cloud) => after[cloud] > before[cloud])!);
    }
    expect(new Set(seen).size, `the session's targets: ${seen.join(', ')}`).to.equal(1);
    expect(others.size, 'requests without a session rotate').to.be.at.least(2);
  });

  it('sends a request with a file_id only to the first-party target (no cloud here offers Files)', async () => {
    const files = createFakeFiles(agent.handler);
    const firstParty: FakeUpstream = await startFakeUpstream(files.handler);
    try {
      gw = await startCloudGateway(
        fakes, [{ id: 'anthropic', url: firstParty.url, apiKeyEnv: 'FIRST_PARTY_KEY' }, fakes.target('bedrock'), fakes.target('vertex')],
        {}, { FIRST_PARTY_KEY: 'first-party-secret-never-shown' },
      );
      const client = anthropic();
      const file = await client.beta.files.upload({ file: await toFile(Buffer.from('The answer is 42.'), 'notes.txt', { type: 'text/plain' }), betas: [FILES_BETA] });
      const before = served(fakes);
      for (let i = 0; i < 3; i++) {
        const reply = await client.beta.messages.create({
          ...ask, betas: [FILES_BETA],
          messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: file.id } }, { type: 'text', text: 'Summarise it.' }] }],
        });
        expect(reply.content[0]).to.deep.include({ type: 'text' });
      }
      expect(served(fakes)).to.deep.equal(before);
      const messages = firstParty.requests.filter((r) => r.url.split('?')[0] === '/v1/messages');
      expect(messages).to.have.length(3);
      expect(messages.every((r) => JSON.stringify(r.body).includes(file.id))).to.equal(true);
      // The same pool still sends requests without a file to the clouds.
      for (let i = 0; i < 3; i++) await client.messages.create(ask);
      const after = served(fakes);
      expect(after.bedrock - before.bedrock + after.vertex - before.vertex).to.be.at.least(1);
    } finally {
      await firstParty.close();
    }
  });

  it("moves a request off Vertex AI's RESOURCE_EXHAUSTED (429) to Bedrock before the first byte", async () => {
    gw = await startCloudGateway(fakes, [fakes.target('vertex'), fakes.target('bedrock')]);
    const before = served(fakes);
    fakes.vertex.exhaust(1);
    expect((await streamAsk()).text).to.equal(TEXT);
    const after = served(fakes);
    expect([after.vertex - before.vertex, after.bedrock - before.bedrock]).to.deep.equal([1, 1]);
  });

  it("gives the client the native error with Bedrock's own wording when no target can serve (429, and ModelNotReady as 503)", async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock')], { maxRetries: 0 });
    try {
      fakes.bedrock.setScript(() => THROTTLED);
      const throttled = await anthropic().messages.create(ask).then(() => null, (error: InstanceType<typeof Anthropic.APIError>) => error);
      expect(throttled?.status).to.equal(429);
      expect((throttled?.error as any)?.error?.type).to.equal('rate_limit_error');
      expect((throttled?.error as any)?.error?.message).to.include((THROTTLED as { message: string }).message);
      // Raw Bedrock answers ModelNotReadyException with 429; nothing ran: the pool and the client see a 503.
      fakes.bedrock.setScript(() => ({ kind: 'error', status: 429, errorType: 'ModelNotReadyException', message: 'Model is not ready to serve inference requests.' }));
      const notReady = await anthropic().messages.create(ask).then(() => null, (error: InstanceType<typeof Anthropic.APIError>) => error);
      expect(notReady?.status).to.equal(503);
      expect((notReady?.error as any)?.error?.type).to.equal('overloaded_error');
      expect((notReady?.error as any)?.error?.message).to.include('Model is not ready to serve inference requests.');
    } finally {
      fakes.setHandler(agent.handler);
    }
  });

  it('sends a Bedrock API key as a bearer token and never shows it, even when Bedrock echoes it', async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock', { apiKeyEnv: 'BEDROCK_API_KEY' })]);
    const from = fakes.bedrock.records.length;
    const whole = await anthropic().messages.create(ask);
    expect(whole.content).to.deep.equal([{ type: 'text', text: TEXT }]);
    const stream = anthropic().messages.stream(ask);
    await stream.finalMessage();
    const sent = fakes.bedrock.records.slice(from);
    expect(sent.map((r) => r.headers.authorization)).to.deep.equal([`Bearer ${BEDROCK_API_KEY}`, `Bearer ${BEDROCK_API_KEY}`]);
    expect(sent.every((r) => r.headers['x-api-key'] === undefined && r.headers['x-amz-date'] === undefined)).to.equal(true);
    try {
      fakes.bedrock.setScript(() => ({ kind: 'error', status: 400, errorType: 'ValidationException', message: `The request with key ${BEDROCK_API_KEY} is malformed.` }));
      const response = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST', headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(ask),
      });
      const text = await response.text();
      expect(response.status, text).to.equal(400);
      expect(JSON.parse(text).error.type).to.equal('invalid_request_error');
      expect(text).not.to.include(BEDROCK_API_KEY);
    } finally {
      fakes.setHandler(agent.handler);
    }
    expect(gw.output()).not.to.include(BEDROCK_API_KEY);
  });

  it("bills each cloud's reply at the catalogue price x that target's priceMultiplier", async () => {
    const multipliers = { bedrock: 1.5, vertex: 1, foundry: 2 };
    gw = await startCloudGateway(fakes, (['bedrock', 'vertex', 'foundry'] as const).map((cloud) => fakes.target(cloud, { priceMultiplier: multipliers[cloud] })));
    const model = CATALOGUE.find((entry) => entry.id === MODEL)!;
    let expected = 0;
    for (let i = 0; i < 6; i++) {
      const before = served(fakes);
      const reportedBefore = agent.reported.length;
      if (i % 2 === 0) await anthropic().messages.create(ask);
      else await anthropic().messages.stream(ask).finalMessage();
      const after = served(fakes);
      const cloud = (['bedrock', 'vertex', 'foundry'] as const).find((name) => after[name] > before[name])!;
      const [{ model: _name, ...usage }] = agent.reported.slice(reportedBefore);
      expected += multipliers[cloud] * priceUsage(model, { ...emptyUsage(), ...usage });
    }
    const usage = await gw.usage(6);
    expect(usage.requests).to.equal(6);
    expect(expected).to.be.greaterThan(0);
    expect(usage.credits).to.be.closeTo(expected, 1e-9);
  });

  it('fails over, nothing sent, when Vertex AI credentials cannot be had (a key its token endpoint refuses); alone, a 502 in the native shape', async () => {
    // A service-account key the token endpoint does not trust: google-auth-library's token request gets invalid_grant.
    const untrusted = createServiceAccount(tempDir('untrusted-key-'), { ...fakes.vertex, trustKey: () => undefined });
    const env = { GOOGLE_APPLICATION_CREDENTIALS: untrusted.keyFile };
    gw = await startCloudGateway(fakes, [fakes.target('vertex'), fakes.target('bedrock')], {}, env);
    const before = served(fakes);
    const whole = await anthropic().messages.create(ask);
    expect(whole.content).to.deep.equal([{ type: 'text', text: TEXT }]);
    let after = served(fakes);
    expect([after.vertex - before.vertex, after.bedrock - before.bedrock]).to.deep.equal([0, 1]);
    await gw.stop();

    gw = await startCloudGateway(fakes, [fakes.target('vertex')], { maxRetries: 0 }, env);
    const response = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(ask),
    });
    const body = (await response.json()) as any;
    expect(response.status, JSON.stringify(body)).to.equal(502);
    expect(body.type).to.equal('error');
    expect(body.error.type).to.be.a('string');
    after = served(fakes);
    expect(after.vertex - before.vertex, 'nothing reached Vertex AI').to.equal(0);
    expect(JSON.stringify(body)).not.to.include(untrusted.json.private_key.slice(40, 80));
  });
});
