/**
 * The fake Bedrock runtime (spec/helpers/fake-bedrock.ts) shown correct with the official clients:
 * `@anthropic-ai/bedrock-sdk`'s AnthropicBedrock (SigV4 and API key, whole and streamed messages, beta
 * flags, an exception frame) and the AWS SDK's BedrockRuntimeClient for CountTokens, which
 * AnthropicBedrock does not offer; and its body rules, table by table.
 */
import { expect } from 'chai';
import type { AnthropicBedrock as AnthropicBedrockType } from '@anthropic-ai/bedrock-sdk';
import { BEDROCK_BETAS, DEFAULT_METRICS, fakeTokenCount, startFakeBedrock, type FakeBedrock } from '../helpers/fake-bedrock';
import { nativeBedrockScript } from '../helpers/fake-bedrock-native';
import { checkBedrockBody } from '../helpers/fake-bedrock-rules';
import { createAgentUpstream } from '../helpers/agent-upstream';
import { nativeTextEvents } from '../helpers/fake-upstream';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'AKIDFAKEBEDROCK', secretAccessKey: 'fake-secret-key/for+tests' };
const API_KEY = 'ABSKfake-bedrock-api-key';
const PROFILE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const BASE = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const METRICS = DEFAULT_METRICS;

describe('fake Bedrock runtime', function () {
  this.timeout(30_000);
  let fake: FakeBedrock;
  before(async () => {
    fake = await startFakeBedrock({ region: REGION, credentials: CREDENTIALS, apiKey: API_KEY, models: [PROFILE, BASE] });
  });
  after(() => fake.close());
  beforeEach(() => fake.reset());

  describe('with the official clients', () => {
    let AnthropicBedrock: typeof AnthropicBedrockType;
    before(async () => {
      ({ AnthropicBedrock } = await import('@anthropic-ai/bedrock-sdk'));
    });
    const client = (extra: Record<string, unknown> = {}) => new AnthropicBedrock({
      baseURL: fake.url, awsRegion: REGION, awsAccessKey: CREDENTIALS.accessKeyId, awsSecretKey: CREDENTIALS.secretAccessKey, maxRetries: 0, ...extra,
    } as any);

    it('answers a whole message to a SigV4-signed request of AnthropicBedrock', async () => {
      const message = await client().messages.create({ model: PROFILE, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
      expect(message.content).to.deep.equal([{ type: 'text', text: 'Hello, world' }]);
      expect(message.usage).to.include({ input_tokens: 10, output_tokens: 5 });
      // The client leaves `:` unencoded (a path character); the AWS SDK encodes it: the fake takes both, as Bedrock does.
      expect(fake.records[0].modelId).to.equal(PROFILE);
      expect(fake.records[0].url).to.match(/\/invoke$/);
      // The client sends its own API version (its `anthropic-version` header) as `anthropic_version`.
      expect(fake.records[0].body.anthropic_version).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect(fake.records[0].body).to.not.have.any.keys('model', 'stream');
    });

    it('streams a message in the AWS event-stream format that AnthropicBedrock decodes to the native events', async () => {
      const events: any[] = [];
      const stream = await client().messages.create({ model: PROFILE, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], stream: true });
      for await (const event of stream) events.push(event);
      // The SDK passes every chunk's JSON on (the metrics ride on message_stop, as Bedrock sends them) but `ping`, which it skips.
      const expected = nativeTextEvents(['Hello', ', world'], undefined, 'claude-bedrock').map((e) => e.data as any).filter((e) => e.type !== 'ping');
      expect(events.map((e) => e.type)).to.deep.equal(expected.map((e) => e.type));
      expect(events.at(-1)['amazon-bedrock-invocationMetrics']).to.deep.equal(METRICS);
      expect(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join('')).to.equal('Hello, world');
    });

    it('answers with a native handler (fake-bedrock-native.ts): a tool call, whole and streamed, as AnthropicBedrock reads it', async () => {
      const agent = createAgentUpstream({ chooseTool: (offered) => (offered.includes('lookup') ? { name: 'lookup', input: { q: 'x' } } : null) });
      fake.setScript(nativeBedrockScript(agent.handler, { [PROFILE]: 'claude-native-name' }));
      const ask = {
        model: PROFILE, max_tokens: 64, messages: [{ role: 'user' as const, content: 'Look it up' }],
        tools: [{ name: 'lookup', description: 'Look it up', input_schema: { type: 'object' as const, properties: {} } }],
      };
      const whole = await client().messages.create(ask);
      expect(whole.stop_reason).to.equal('tool_use');
      expect(whole.content.at(-1)).to.deep.include({ type: 'tool_use', name: 'lookup', input: { q: 'x' } });
      expect(whole.model).to.equal('claude-native-name');
      const stream = client().messages.stream(ask);
      const final = await stream.finalMessage();
      expect(final.content.at(-1)).to.deep.include({ type: 'tool_use', name: 'lookup', input: { q: 'x' } });
      expect(final.usage.output_tokens).to.equal(agent.reported[1].output_tokens);
      // The invocation metrics the adapter adds (on the last chunk) are the counts the native events report.
      const events: any[] = [];
      for await (const event of await client().messages.create({ ...ask, stream: true })) events.push(event);
      expect(events.at(-1)['amazon-bedrock-invocationMetrics']).to.include({ inputTokenCount: agent.reported[2].input_tokens, outputTokenCount: agent.reported[2].output_tokens });
      expect(fake.records.map((r) => r.body.model)).to.deep.equal([undefined, undefined, undefined]);
    });

    it('refuses a wrong secret key with 403 and Bedrock\'s wording', async () => {
      const error: any = await client({ awsSecretKey: 'not-the-secret' }).messages.create({ model: PROFILE, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] }).catch((e) => e);
      expect(error.status).to.equal(403);
      expect(String(error.message)).to.include('The request signature we calculated does not match');
    });

    it('accepts a Bedrock API key as a bearer token and refuses another', async () => {
      const message = await new AnthropicBedrock({ baseURL: fake.url, awsRegion: REGION, apiKey: API_KEY, maxRetries: 0 }).messages.create({ model: PROFILE, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] });
      expect(message.content[0]).to.include({ text: 'Hello, world' });
      const error: any = await new AnthropicBedrock({ baseURL: fake.url, awsRegion: REGION, apiKey: 'ABSKwrong', maxRetries: 0 }).messages.create({ model: PROFILE, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] }).catch((e) => e);
      expect(error.status).to.equal(403);
    });

    it('refuses a beta flag Bedrock does not list, accepts one it lists', async () => {
      const params = { model: PROFILE, max_tokens: 8, messages: [{ role: 'user' as const, content: 'Hi' }] };
      const refused: any = await client().beta.messages.create({ ...params, betas: ['files-api-2025-04-14'] }).catch((e) => e);
      expect(refused.status).to.equal(400);
      expect(String(refused.message)).to.include('invalid beta flag');
      const accepted = await client().beta.messages.create({ ...params, betas: ['context-1m-2025-08-07'] });
      expect(accepted.content[0]).to.include({ text: 'Hello, world' });
      expect(fake.records.at(-1)!.body.anthropic_beta).to.deep.equal(['context-1m-2025-08-07']);
    });

    it('ends a stream with an exception frame that AnthropicBedrock reports with Bedrock\'s wording', async () => {
      fake.setScript(() => ({ kind: 'events', events: nativeTextEvents(['Hello', ', world']), exception: { after: 3, type: 'modelStreamErrorException', message: 'The model stream failed midway.' } }));
      const stream = await client().messages.create({ model: PROFILE, max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], stream: true });
      const error: any = await (async () => {
        for await (const _event of stream) { /* read on */ }
      })().catch((e) => e);
      expect(String(error?.message)).to.include('The model stream failed midway.');
    });

    it('counts tokens for the AWS SDK\'s CountTokensCommand with a base model ID, refuses an inference profile', async () => {
      const { BedrockRuntimeClient, CountTokensCommand } = await import('@aws-sdk/client-bedrock-runtime');
      const { NodeHttpHandler } = await import('@smithy/node-http-handler');
      // HTTP/1.1: the client's default handler speaks HTTP/2 (for the bidirectional stream), which the fake does not.
      const aws = new BedrockRuntimeClient({ region: REGION, endpoint: fake.url, credentials: CREDENTIALS, maxAttempts: 1, requestHandler: new NodeHttpHandler() });
      const invokeBody = { anthropic_version: 'bedrock-2023-05-31', max_tokens: 10, messages: [{ role: 'user', content: 'Count me' }] };
      const counted = await aws.send(new CountTokensCommand({ modelId: BASE, input: { invokeModel: { body: Buffer.from(JSON.stringify(invokeBody)) } } }));
      expect(counted.inputTokens).to.equal(fakeTokenCount(invokeBody));
      const refused: any = await aws.send(new CountTokensCommand({ modelId: PROFILE, input: { invokeModel: { body: Buffer.from(JSON.stringify(invokeBody)) } } })).catch((e) => e);
      expect(refused.name).to.equal('ValidationException');
      expect(refused.message).to.include("doesn't support counting tokens");
      aws.destroy();
    });
  });

  describe('its rules', () => {
    const body = (extra: Record<string, unknown> = {}) => ({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 8, messages: [], ...extra });
    const judge = (operation: string, modelId: string, value: unknown) => checkBedrockBody(operation, modelId, Buffer.from(JSON.stringify(value)), [PROFILE, BASE]);
    const count = (inner: unknown) => ({ input: { invokeModel: { body: Buffer.from(JSON.stringify(inner)).toString('base64') } } });

    it('refuses what Bedrock refuses, in its wording', () => {
      const { anthropic_version: _v, ...noVersion } = body();
      const cases: Array<[string, string, unknown, string | null]> = [
        ['invoke', PROFILE, body(), null],
        ['invoke', PROFILE, body({ anthropic_version: '2023-06-01' }), null],
        ['invoke', PROFILE, body({ model: 'x' }), 'Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.'],
        ['invoke', PROFILE, body({ stream: true }), 'Malformed input request: #: extraneous key [stream] is not permitted, please reformat your input and try again.'],
        ['invoke', PROFILE, noVersion, 'Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again.'],
        ['invoke', PROFILE, body({ anthropic_version: 'vertex-2023-10-16' }), 'Invalid API version: vertex-2023-10-16'],
        ['invoke', PROFILE, body({ anthropic_beta: ['claude-code-20250219'] }), 'invalid beta flag'],
        ['invoke', PROFILE, body({ tools: [{ name: 't', input_schema: {}, eager_input_streaming: true }] }), 'Malformed input request: #/tools/0: extraneous key [eager_input_streaming] is not permitted, please reformat your input and try again.'],
        ['invoke', 'anthropic.claude-unknown', body(), 'The provided model identifier is invalid.'],
        ['count-tokens', BASE, count(body()), null],
        ['count-tokens', PROFILE, count(body()), "The provided model doesn't support counting tokens."],
        ['count-tokens', BASE, count(body({ model: 'x' })), 'Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.'],
      ];
      for (const [operation, modelId, value, message] of cases) {
        const refusal = judge(operation, modelId, value);
        expect(refusal && { status: refusal.status, errorType: refusal.errorType, message: refusal.message }, JSON.stringify(value))
          .to.deep.equal(message === null ? null : { status: 400, errorType: 'ValidationException', message });
      }
    });

    it('accepts every beta flag of its list', () => {
      expect(judge('invoke', PROFILE, body({ anthropic_beta: [...BEDROCK_BETAS] }))).to.equal(null);
    });
  });
});
