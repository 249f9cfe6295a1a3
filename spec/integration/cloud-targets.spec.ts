/**
 * Cloud targets end to end (issue 43): the real gateway on loopback with a pool of first-party and
 * cloud targets, each a local fake of its service that refuses what the service refuses. Every route
 * (native whole and streamed, count_tokens, chat-completions, Responses) through each cloud; what a
 * cloud refuses dropped and named in `x-gateway-dropped-params`; a request needing a feature sent only
 * where it is offered; failover across providers before the first byte; billing with `priceMultiplier`.
 *
 * CLOUDS lists one entry per cloud whose fake is available: Foundry now; Bedrock and Vertex add theirs.
 */
import { expect } from 'chai';
import Anthropic from '@anthropic-ai/sdk';
import { parseConfig } from '../../lib/config';
import { waitForAfterResponseSteps } from '../../lib/app';
import { startGateway, type RunningGateway } from '../../lib/server';
import { utcMonth } from '../../lib/store/month';
import { priceUsage } from '../../lib/billing/pricing';
import { emptyUsage } from '../../lib/pipeline/context';
import { startFakeFoundry, type FakeFoundry } from '../helpers/fake-foundry';
import { startFakeUpstream, type FakeUpstream, type RecordedRequest } from '../helpers/fake-upstream';
import { createCapturingLogger, KEYS, testConfigObject } from '../helpers/gateway';
import { chatHeaders, nativeHeaders, rawRequest } from '../helpers/http-client';

const MODEL = 'model-sonnet-4.6';
const FIRST_PARTY_KEY = 'cloud-spec-anthropic-secret';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const CATALOGUE: string[] = require('../../../config.json').models.map((model: { id: string }) => model.id);

/** One cloud under test: its fake, the target config that points at it, and what its fake accepted. */
interface CloudUnderTest {
  name: string;
  start(): Promise<{ target: Record<string, unknown>; accepted: () => RecordedRequest[]; modelSeen: (request: RecordedRequest) => string | undefined; close(): Promise<void>; fake: FakeFoundry }>;
}

const FOUNDRY_SECRET = 'cloud-spec-foundry-secret-never-shown';
const CLOUDS: CloudUnderTest[] = [
  {
    name: 'foundry',
    async start() {
      process.env.CLOUD_SPEC_FOUNDRY_KEY = FOUNDRY_SECRET;
      // A deployment per catalogue model: a target alone must serve every model of its key group.
      const modelIds = Object.fromEntries(CATALOGUE.map((id) => [id, id === MODEL ? 'claude-sonnet-deploy' : `deploy-${id.replace(/\./g, '-')}`]));
      const fake = await startFakeFoundry({ apiKey: FOUNDRY_SECRET, deployments: Object.values(modelIds) });
      return {
        fake,
        target: { id: 'foundry-east', provider: 'foundry', url: fake.endpoint, apiKeyEnv: 'CLOUD_SPEC_FOUNDRY_KEY', modelIds },
        accepted: () => fake.accepted,
        modelSeen: (request) => request.body?.model,
        close: () => fake.close(),
      };
    },
  },
];

interface Pool {
  running: RunningGateway;
  url: string;
  credits(): Promise<number>;
  close(): Promise<void>;
}

/** A gateway whose top-level upstream is `targets`. */
async function startPool(targets: Array<Record<string, unknown>>): Promise<Pool> {
  process.env.CLOUD_SPEC_ANTHROPIC_KEY = FIRST_PARTY_KEY;
  const base = testConfigObject('http://127.0.0.1:1');
  const config = parseConfig({ ...base, upstream: { targets, timeoutMs: 5000, retryBaseDelayMs: 5 } }, { PORT: '0' });
  const { logger } = createCapturingLogger();
  const running = await startGateway({ config, logger, host: '127.0.0.1', requestScope: false });
  return {
    running,
    url: running.url,
    async credits() {
      await waitForAfterResponseSteps(running.gateway.router);
      const rows = await running.store.getUsage('team-all', utcMonth(Date.now()));
      return rows.reduce((sum, row) => sum + row.credits, 0);
    },
    close: () => running.close(),
  };
}

const post = (pool: Pool, path: string, body: object, headers = nativeHeaders()) => rawRequest(pool.url, { method: 'POST', path, headers, body });
const hello = { model: MODEL, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Hello' }] };

for (const cloud of CLOUDS) {
  describe(`cloud targets: ${cloud.name} alone`, function () {
    this.timeout(30_000);
    let pool: Pool;
    let under: Awaited<ReturnType<CloudUnderTest['start']>>;
    before(async () => {
      under = await cloud.start();
      pool = await startPool([{ ...under.target, priceMultiplier: 2 }]);
    });
    after(async () => {
      await pool?.close();
      await under?.close();
    });

    it('serves a whole native reply with the official client, the model sent as the target\'s model ID, billed as reported x priceMultiplier', async () => {
      const before = await pool.credits();
      const client = new Anthropic({ baseURL: pool.url, apiKey: KEYS.all, maxRetries: 0 });
      const message = await client.messages.create(hello);
      expect(message.content[0]).to.include({ type: 'text', text: 'Hello, world' });
      const seen = under.accepted().at(-1)!;
      expect(under.modelSeen(seen)).to.equal('claude-sonnet-deploy');
      expect(JSON.stringify(seen.headers)).to.not.include(KEYS.all);
      const model = pool.running.gateway.config.models.find((entry) => entry.id === MODEL)!;
      const priced = priceUsage(model, { ...emptyUsage(), input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens });
      expect(await pool.credits() - before).to.be.closeTo(2 * priced, 1e-9);
    });

    it('relays a streamed native reply', async () => {
      const client = new Anthropic({ baseURL: pool.url, apiKey: KEYS.all, maxRetries: 0 });
      const stream = client.messages.stream(hello);
      const final = await stream.finalMessage();
      expect(final.content[0]).to.include({ type: 'text', text: 'Hello, world' });
      expect(under.accepted().at(-1)!.body.stream).to.equal(true);
    });

    it('answers count_tokens through the target', async () => {
      const reply = await post(pool, '/v1/messages/count_tokens', { model: MODEL, messages: hello.messages });
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.json).to.deep.equal({ input_tokens: 42 });
      expect(under.accepted().at(-1)!.url).to.equal('/v1/messages/count_tokens');
    });

    it('serves chat-completions and Responses through the target', async () => {
      const chat = await post(pool, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Hello' }] }, chatHeaders());
      expect(chat.status, chat.text).to.equal(200);
      expect(chat.json.choices[0].message.content).to.equal('Hello, world');
      const responses = await post(pool, '/v1/responses', { model: MODEL, input: 'Hello' }, chatHeaders());
      expect(responses.status, responses.text).to.equal(200);
      expect(responses.json.output.at(-1).content[0].text).to.equal('Hello, world');
      expect(under.modelSeen(under.accepted().at(-1)!)).to.equal('claude-sonnet-deploy');
    });

    it('drops the beta flags the cloud refuses (Claude Code\'s) and names them, instead of its 400', async () => {
      const headers: Array<[string, string]> = [...nativeHeaders(), ['anthropic-beta', 'claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14']];
      const reply = await post(pool, '/v1/messages', hello, headers);
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.headers['x-gateway-dropped-params']).to.equal('claude-code-20250219, fine-grained-tool-streaming-2025-05-14');
      expect(under.accepted().at(-1)!.headers['anthropic-beta']).to.equal('interleaved-thinking-2025-05-14');
    });

    it('names what it dropped on a streamed reply too', async () => {
      const headers: Array<[string, string]> = [...nativeHeaders(), ['anthropic-beta', 'claude-code-20250219']];
      const reply = await post(pool, '/v1/messages', { ...hello, stream: true }, headers);
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.headers['content-type']).to.include('text/event-stream');
      expect(reply.headers['x-gateway-dropped-params']).to.equal('claude-code-20250219');
      expect(reply.text).to.include('event: message_stop');
      expect(under.accepted().at(-1)!.headers).to.not.have.property('anthropic-beta');
    });

    it('refuses a Message Batch with a 400 naming the feature and the target, sending nothing', async () => {
      const count = under.accepted().length;
      const reply = await post(pool, '/v1/messages/batches', { requests: [{ custom_id: 'a', params: hello }] });
      expect(reply.status, reply.text).to.equal(400);
      expect(reply.json.error.type).to.equal('invalid_request_error');
      expect(reply.json.error.message).to.include('batches').and.include(`"${String(under.target.id)}"`);
      expect(under.accepted().length).to.equal(count);
    });

    it('gives the cloud\'s own error in the native shape, its wording kept', async () => {
      under.fake.setHandler(() => ({ kind: 'json', status: 400, body: { error: { code: 'BadRequest', message: 'prompt is too long for this deployment' } } }));
      try {
        const reply = await post(pool, '/v1/messages', hello);
        expect(reply.status).to.equal(400);
        expect(reply.json).to.deep.include({ type: 'error' });
        expect(reply.json.error).to.deep.equal({ type: 'invalid_request_error', message: 'prompt is too long for this deployment' });
      } finally {
        under.fake.setHandler((request) => (require('../helpers/fake-upstream') as typeof import('../helpers/fake-upstream')).defaultHandler(request));
      }
    });
  });

  describe(`cloud targets: ${cloud.name} and the first-party API in one pool`, function () {
    this.timeout(30_000);
    let pool: Pool;
    let under: Awaited<ReturnType<CloudUnderTest['start']>>;
    let firstParty: FakeUpstream;
    before(async () => {
      under = await cloud.start();
      firstParty = await startFakeUpstream();
      pool = await startPool([
        { id: 'first-party', url: firstParty.url, apiKeyEnv: 'CLOUD_SPEC_ANTHROPIC_KEY' },
        { ...under.target, weight: 3, priceMultiplier: 2 },
      ]);
    });
    after(async () => {
      await pool.close();
      await under.close();
      await firstParty.close();
    });

    it('keeps a session on its target across providers', async () => {
      const firstBefore = firstParty.requests.length;
      const cloudBefore = under.accepted().length;
      const headers: Array<[string, string]> = [...nativeHeaders(), ['x-claude-code-session-id', 'cloud-spec-session-1']];
      for (let i = 0; i < 6; i++) expect((await post(pool, '/v1/messages', hello, headers)).status).to.equal(200);
      const toFirst = firstParty.requests.length - firstBefore;
      const toCloud = under.accepted().length - cloudBefore;
      expect([toFirst, toCloud].sort()).to.deep.equal([0, 6]);
    });

    it('moves a request the cloud throttles (429) to the first-party target before the first byte', async () => {
      under.fake.setHandler(() => ({ kind: 'json', status: 429, headers: { 'retry-after': '30' }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached' } } }));
      try {
        const client = new Anthropic({ baseURL: pool.url, apiKey: KEYS.all, maxRetries: 0 });
        for (let i = 0; i < 3; i++) {
          const message = await client.messages.create(hello);
          expect(message.content[0]).to.include({ text: 'Hello, world' });
        }
      } finally {
        under.fake.setHandler((request) => (require('../helpers/fake-upstream') as typeof import('../helpers/fake-upstream')).defaultHandler(request));
      }
      const health = pool.running.gateway.upstreams.all()[0].describeTargets().find((target) => target.id === under.target.id)!;
      expect(health.failures).to.be.greaterThan(0);
    });
  });
}
