/**
 * The official clients, stock (no header overrides), against the running gateway and a local fake
 * upstream: native SDK 0.x (x-api-key + 2023-06-01) and 1.x (Bearer + a later version), and the
 * chat-completions SDK.
 */
import { expect } from 'chai';
import Anthropic from '@anthropic-ai/sdk';
import AnthropicLegacy from 'anthropic-sdk-legacy';
import OpenAI from 'openai';
import { KEYS, startTestGateway, testConfigObject, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';

const CATALOGUE = ['model-opus-5', 'model-fable-5', 'model-opus-4.8', 'model-opus-4.7', 'model-opus-4.6', 'model-sonnet-5', 'model-sonnet-4.6', 'model-haiku-4.5'];

/** The shipped catalogue, with the sonnet entry known upstream by another name. */
function renamedModels(): unknown[] {
  const shipped = testConfigObject('http://unused').models as Array<Record<string, unknown>>;
  return shipped.map((m) => (m.id === 'model-sonnet-4.6' ? { ...m, upstreamModel: 'upstream-sonnet-2026' } : m));
}

describe('integration: official SDKs against the gateway', function () {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({ overrides: { models: renamedModels() } });
  });
  after(async () => t.close());
  beforeEach(() => {
    t.upstream.requests.length = 0;
  });

  const nativeClients: Array<[string, () => any, string]> = [
    ['native SDK 0.x', () => new AnthropicLegacy({ apiKey: KEYS.all, baseURL: t.url, maxRetries: 0 }), '2023-06-01'],
    ['native SDK 1.x', () => new Anthropic({ apiKey: KEYS.all, baseURL: t.url, maxRetries: 0 }), '2026-10-21'],
  ];

  for (const [name, makeClient, version] of nativeClients) {
    describe(name, () => {
      it('creates a message: alias resolved, model rewritten upstream, canonical model in the reply', async () => {
        const reply = await makeClient().messages.create({ model: 'sonnet', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
        expect(reply.content[0]).to.deep.include({ type: 'text', text: 'Hello, world' });
        expect(reply.model).to.equal('model-sonnet-4.6');
        expect(reply.usage).to.include({ input_tokens: 10, output_tokens: 5 });
        const sent = t.upstream.requests[0];
        expect(sent.url).to.equal('/v1/messages');
        expect(sent.body.model).to.equal('upstream-sonnet-2026');
        expect(sent.headers['x-api-key']).to.equal(UPSTREAM_SECRET);
        expect(sent.headers.authorization).to.equal(undefined);
        expect(sent.headers['anthropic-version']).to.equal(version);
      });

      it('streams a message event by event, naming the canonical model', async () => {
        const stream = makeClient().messages.stream({ model: 'model-sonnet-4.6', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
        const texts: string[] = [];
        stream.on('text', (text: string) => texts.push(text));
        const final = await stream.finalMessage();
        expect(texts).to.deep.equal(['Hello', ', world']);
        expect(final.model).to.equal('model-sonnet-4.6');
        expect(final.stop_reason).to.equal('end_turn');
        expect(final.usage.output_tokens).to.equal(5);
        expect(t.upstream.requests[0].body).to.include({ model: 'upstream-sonnet-2026', stream: true });
      });

      it('counts tokens through the gateway', async () => {
        const counted = await makeClient().messages.countTokens({ model: 'haiku', messages: [{ role: 'user', content: 'Hi' }] });
        expect(counted.input_tokens).to.equal(42);
        expect(t.upstream.requests[0].url).to.equal('/v1/messages/count_tokens');
        expect(t.upstream.requests[0].body.model).to.equal('model-haiku-4.5');
      });

      it('lists the catalogue IDs, never aliases', async () => {
        const page = await makeClient().models.list();
        expect(page.data.map((m: { id: string }) => m.id)).to.deep.equal(CATALOGUE);
      });

      it('retrieves a model (models.retrieve) in the native shape; one the key may not use is a NotFoundError', async () => {
        const model = await makeClient().models.retrieve('model-haiku-4.5');
        expect(model).to.include({ type: 'model', id: 'model-haiku-4.5', display_name: 'model-haiku-4.5' });
        expect(model.created_at).to.be.a('string');
        const restricted: any = name.includes('0.x')
          ? new AnthropicLegacy({ apiKey: KEYS.haikuOnly, baseURL: t.url, maxRetries: 0 })
          : new Anthropic({ apiKey: KEYS.haikuOnly, baseURL: t.url, maxRetries: 0 });
        for (const id of ['model-sonnet-4.6', 'sonnet', 'no-such-model']) {
          const error = await restricted.models.retrieve(id).catch((e: unknown) => e);
          expect(error).to.be.instanceOf(name.includes('0.x') ? AnthropicLegacy.NotFoundError : Anthropic.NotFoundError);
          expect(error.error).to.deep.include({ type: 'error' });
          expect(error.error.error.type).to.equal('not_found_error');
        }
      });

      it('surfaces a wrong key as an authentication error', async () => {
        const client: any = name.includes('0.x')
          ? new AnthropicLegacy({ apiKey: 'sk-cs4-not-a-real-key-000', baseURL: t.url, maxRetries: 0 })
          : new Anthropic({ apiKey: 'sk-cs4-not-a-real-key-000', baseURL: t.url, maxRetries: 0 });
        const error = await client.messages.create({ model: 'sonnet', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(name.includes('0.x') ? AnthropicLegacy.AuthenticationError : Anthropic.AuthenticationError);
        expect((error as { status: number }).status).to.equal(401);
      });
    });
  }

  describe('chat-completions SDK', () => {
    const client = () => new OpenAI({ apiKey: KEYS.all, baseURL: `${t.url}/v1`, maxRetries: 0 });

    it('creates a chat completion', async () => {
      const completion = await client().chat.completions.create({
        model: 'sonnet',
        messages: [{ role: 'system', content: 'Be brief.' }, { role: 'developer', content: 'Be kind.' }, { role: 'user', content: 'Hi' }],
      });
      expect(completion.object).to.equal('chat.completion');
      expect(completion.model).to.equal('model-sonnet-4.6');
      expect(completion.choices[0].message).to.include({ role: 'assistant', content: 'Hello, world' });
      expect(completion.choices[0].finish_reason).to.equal('stop');
      expect(completion.usage).to.include({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
      const sent = t.upstream.requests[0].body;
      expect(sent).to.include({ model: 'upstream-sonnet-2026', system: 'Be brief.\nBe kind.', max_tokens: 64000 }); // no limit given: the model's output ceiling
      expect(sent.messages).to.deep.equal([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
      expect(t.upstream.requests[0].headers['anthropic-version']).to.equal('2023-06-01');
    });

    it('streams chunks in order: role, content, finish_reason, [DONE]', async () => {
      const stream = await client().chat.completions.create({ model: 'haiku', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.map((c) => c.choices[0]?.delta)).to.deep.equal([{ role: 'assistant', content: '' }, { content: 'Hello' }, { content: ', world' }, {}]);
      expect(chunks.map((c) => c.choices[0]?.finish_reason)).to.deep.equal([null, null, null, 'stop']);
      expect(new Set(chunks.map((c) => c.id)).size).to.equal(1);
      expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'model-haiku-4.5')).to.equal(true);
    });

    it('lists models with the Bearer header', async () => {
      const page = await client().models.list();
      expect(page.data.map((m) => m.id)).to.deep.equal(CATALOGUE);
      expect(page.data[0]).to.include({ object: 'model', owned_by: 'model-gateway' });
    });

    it('retrieves a model (models.retrieve) in the OpenAI shape; one the key may not use is a NotFoundError', async () => {
      const model = await client().models.retrieve('model-haiku-4.5');
      expect(model).to.deep.equal({ id: 'model-haiku-4.5', object: 'model', created: model.created, owned_by: 'model-gateway' });
      expect(model.created).to.be.a('number');
      const restricted = new OpenAI({ apiKey: KEYS.haikuOnly, baseURL: `${t.url}/v1`, maxRetries: 0 });
      const error = await restricted.models.retrieve('model-sonnet-4.6').catch((e) => e);
      expect(error).to.be.instanceOf(OpenAI.NotFoundError);
      expect(error.code).to.equal('model_not_found');
    });

    it('lists only the models a restricted key may use', async () => {
      const restricted = new OpenAI({ apiKey: KEYS.haikuOnly, baseURL: `${t.url}/v1`, maxRetries: 0 });
      const page = await restricted.models.list();
      expect(page.data.map((m) => m.id)).to.deep.equal(['model-haiku-4.5']);
    });

    it('surfaces a model the key may not use as a 403 with code model_not_allowed', async () => {
      const restricted = new OpenAI({ apiKey: KEYS.haikuOnly, baseURL: `${t.url}/v1`, maxRetries: 0 });
      const error = await restricted.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
      expect(error).to.be.instanceOf(OpenAI.PermissionDeniedError);
      expect(error.code).to.equal('model_not_allowed');
      expect(t.upstream.requests).to.have.length(0);
    });
  });
});
