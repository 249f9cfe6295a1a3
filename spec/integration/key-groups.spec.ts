/**
 * Second key group (spec, Authentication rule 8): a chat-completions family behind its own prefix and
 * upstream, passed through untranslated; key group / model family matching; per-group model lists;
 * the native route refused or reverse-translated.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import Anthropic from 'anthropic-sdk-legacy';
import { KEYS } from '../helpers/gateway';
import { chatCompletion, chatHandler, chatStreamReply, chatTextChunks } from '../helpers/fake-chat';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { eventually, startLibraryGateway, TEST_KEYS, type LibraryGateway } from '../helpers/library';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');
const FAMILY_KEY = 'sk-fam-test-family-key-0001';
const FAMILY_SECRET = 'family-upstream-secret';

function familyConfig(chatUrl: string, reverseTranslation: boolean): Record<string, unknown> {
  return {
    models: [
      ...shipped.models,
      { id: 'fam-5', upstreamModel: 'fam-large-2026', pricing: { inputPerMillion: 2, outputPerMillion: 8 } },
      { id: 'fam-mini', upstreamModel: 'fam-mini', pricing: { inputPerMillion: 1, outputPerMillion: 2 } },
    ],
    aliases: { ...shipped.aliases, fam: 'fam-5' },
    keyGroups: [{ id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5', 'fam-mini'], upstream: { kind: 'chat-completions', url: chatUrl, apiKeyEnv: 'TEST_FAMILY_API_KEY' }, reverseTranslation }],
    keys: [...TEST_KEYS, { id: 'family-team', key: FAMILY_KEY, rateLimitPerMinute: 100000 }],
  };
}

const chatPost = (url: string, key: string, body: unknown) => fetch(`${url}/v1/chat/completions`, {
  method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
});
const nativePost = (url: string, key: string, body: unknown) => fetch(`${url}/v1/messages`, {
  method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(body),
});

describe('second key group', () => {
  let native: FakeUpstream;
  let chat: FakeUpstream;
  let gw: LibraryGateway;

  before(async () => {
    process.env.TEST_FAMILY_API_KEY = FAMILY_SECRET;
    native = await startFakeUpstream();
    chat = await startFakeUpstream(chatHandler);
  });
  after(async () => {
    await native.close();
    await chat.close();
  });

  describe('with reverse translation off', () => {
    before(async () => {
      gw = await startLibraryGateway(native.url, { config: familyConfig(chat.url, false) });
    });
    after(() => gw.close());

    it('lists only the models of the key group', async () => {
      const family = await (await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': FAMILY_KEY } })).json() as any;
      expect(family.data.map((m: any) => m.id)).to.deep.equal(['fam-5', 'fam-mini']);
      const basic = await (await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': KEYS.all } })).json() as any;
      expect(basic.data.map((m: any) => m.id)).to.have.length(8).and.not.include('fam-5');
    });

    it('passes a chat request to the group upstream untranslated (with the max_tokens its credit hold counted), with the upstream credential', async () => {
      const before = native.requests.length;
      const body = { model: 'fam', messages: [{ role: 'developer', content: 'x' }, { role: 'user', content: 'Salut' }], temperature: 1.7, logprobs: true, n: 2 };
      const reply = await chatPost(gw.url, FAMILY_KEY, body);
      expect(reply.status).to.equal(200);
      const completion = await reply.json() as any;
      expect(completion).to.deep.equal({ ...chatCompletion('Bonjour', 'fam-5') });
      const sent = chat.requests.at(-1)!;
      expect(sent.url).to.equal('/v1/chat/completions');
      expect(sent.body).to.deep.equal({ ...body, model: 'fam-large-2026', max_tokens: 4096 });
      expect(sent.headers.authorization).to.equal(`Bearer ${FAMILY_SECRET}`);
      expect(JSON.stringify(sent.headers)).to.not.contain(FAMILY_KEY);
      expect(native.requests.length).to.equal(before);
    });

    it('passes a stream through record by record, hiding the usage chunk the client did not ask for', async () => {
      const before = requestLineCount(gw);
      const client = new OpenAI({ apiKey: FAMILY_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'fam-5', stream: true, messages: [{ role: 'user', content: 'Salut' }] });
      const chunks: any[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? null)).to.deep.equal(['', 'Bon', 'jour', null]);
      expect(chunks.every((c) => !('usage' in c) && c.model === 'fam-5')).to.equal(true);
      expect(chat.requests.at(-1)!.body.stream_options).to.deep.equal({ include_usage: true });
      const line = await nextRequestLine(gw, before, { model: 'fam-5', stream: true });
      expect(line).to.include({ model: 'fam-5', key_group: 'family', input_tokens: 11, output_tokens: 7, status: 200 });
    });

    it('keeps the usage chunk, byte for byte, when the client asked for it', async () => {
      const reply = await chatPost(gw.url, FAMILY_KEY, { model: 'fam-mini', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Salut' }] });
      const text = await reply.text();
      const expected = chatTextChunks(['Bon', 'jour'], 'fam-mini', { prompt_tokens: 11, completion_tokens: 7 }).map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
      expect(text).to.equal(expected);
    });

    it('ends an interrupted pass-through stream with an error record, not [DONE]', async () => {
      chat.setHandler(() => chatStreamReply(chatTextChunks(['Bon'], 'fam-mini').slice(0, 2), false));
      try {
        const text = await (await chatPost(gw.url, FAMILY_KEY, { model: 'fam-mini', stream: true, messages: [{ role: 'user', content: 'Salut' }] })).text();
        expect(text).to.not.contain("data: [DONE]");
        const last = JSON.parse(text.trim().split('\n\n').at(-1)!.slice('data: '.length));
        expect(last.error).to.include({ type: 'server_error', code: 'upstream_error' });
      } finally {
        chat.setHandler(chatHandler);
      }
    });

    it('passes an upstream error status and body through', async () => {
      // retry-after beyond the 20 s the gateway waits to retry (upstream.maxRetryAfterMs): it answers at once.
      chat.setHandler(() => ({ kind: 'json', status: 429, headers: { 'retry-after': '30' }, body: { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } } }));
      try {
        const reply = await chatPost(gw.url, FAMILY_KEY, { model: 'fam-mini', messages: [{ role: 'user', content: 'Salut' }] });
        expect(reply.status).to.equal(429);
        expect(reply.headers.get('retry-after')).to.equal('30');
        expect((await reply.json() as any).error.code).to.equal('rate_limit_exceeded');
      } finally {
        chat.setHandler(chatHandler);
      }
    });

    it('never relays the group upstream credential quoted in an error body, nor a reply that is not a completion', async () => {
      chat.setHandler(() => ({ kind: 'json', status: 401, body: { error: { message: `Incorrect API key provided: ${FAMILY_SECRET}`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } }));
      try {
        const reply = await chatPost(gw.url, FAMILY_KEY, { model: 'fam-mini', messages: [{ role: 'user', content: 'Salut' }] });
        expect(reply.status).to.equal(401);
        const text = await reply.text();
        expect(text).not.to.include(FAMILY_SECRET);
        expect(JSON.parse(text).error.message).to.equal('Incorrect API key provided: [redacted]');
        chat.setHandler(() => ({ kind: 'json', status: 200, body: { nonsense: true } }));
        const odd = await chatPost(gw.url, FAMILY_KEY, { model: 'fam-mini', messages: [{ role: 'user', content: 'Salut' }] });
        expect(odd.status).to.equal(502);
        expect(((await odd.json()) as any).error.code).to.equal('upstream_error');
      } finally {
        chat.setHandler(chatHandler);
      }
    });

    it('refuses a key of one group asking for a model of the other with 403 model_not_allowed naming the group', async () => {
      const cross = await chatPost(gw.url, FAMILY_KEY, { model: 'sonnet', messages: [{ role: 'user', content: 'x' }] });
      expect(cross.status).to.equal(403);
      const body = await cross.json() as any;
      expect(body.error.code).to.equal('model_not_allowed');
      expect(body.error.message).to.contain('"default"').and.contain('"family"');
      const other = await chatPost(gw.url, KEYS.all, { model: 'fam-5', messages: [{ role: 'user', content: 'x' }] });
      expect(other.status).to.equal(403);
      expect((await other.json() as any).error.message).to.contain('key group "family"');
      const nativeCross = await nativePost(gw.url, KEYS.all, { model: 'fam', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
      expect(nativeCross.status).to.equal(403);
      expect((await nativeCross.json() as any).error.type).to.equal('permission_error');
    });

    it('refuses the native route for the chat-completions group with a clear 400', async () => {
      const reply = await nativePost(gw.url, FAMILY_KEY, { model: 'fam-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
      expect(reply.status).to.equal(400);
      const body = await reply.json() as any;
      expect(body.error.type).to.equal('invalid_request_error');
      expect(body.error.message).to.contain('POST /v1/chat/completions').and.contain('reverseTranslation');
    });

    it('rejects keys whose prefix belongs to no group, without naming the prefixes there are', async () => {
      const reply = await chatPost(gw.url, 'sk-other-test-key-000001', { model: 'fam-5', messages: [{ role: 'user', content: 'x' }] });
      expect(reply.status).to.equal(401);
      const message = (await reply.json() as any).error.message;
      expect(message).to.equal('invalid API key');
      expect(message).to.not.contain('sk-cs4-').and.not.contain('sk-fam-');
    });
  });

  describe('with reverse translation on', () => {
    before(async () => {
      gw = await startLibraryGateway(native.url, { config: familyConfig(chat.url, true) });
    });
    after(() => gw.close());

    it('serves a native request through the chat-completions upstream', async () => {
      const client = new Anthropic({ apiKey: FAMILY_KEY, baseURL: gw.url, maxRetries: 0 });
      const message = await client.messages.create({ model: 'fam', max_tokens: 50, system: 'Be brief.', messages: [{ role: 'user', content: 'Salut' }] });
      expect(message.content).to.deep.equal([{ type: 'text', text: 'Bonjour' }]);
      expect(message.model).to.equal('fam-5');
      expect(message.stop_reason).to.equal('end_turn');
      expect(message.usage).to.include({ input_tokens: 11, output_tokens: 7 });
      expect(chat.requests.at(-1)!.body).to.deep.equal({ model: 'fam-large-2026', max_tokens: 50, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Salut' }] });
    });

    it('streams a native reply translated from chunks, with usage settled', async () => {
      const before = requestLineCount(gw);
      const client = new Anthropic({ apiKey: FAMILY_KEY, baseURL: gw.url, maxRetries: 0 });
      const stream = client.messages.stream({ model: 'fam-mini', max_tokens: 50, messages: [{ role: 'user', content: 'Salut' }] });
      const texts: string[] = [];
      stream.on('text', (text) => texts.push(text));
      const final = await stream.finalMessage();
      expect(texts).to.deep.equal(['Bon', 'jour']);
      expect(final.content).to.deep.equal([{ type: 'text', text: 'Bonjour' }]);
      expect(final.usage.output_tokens).to.equal(7);
      const line = await nextRequestLine(gw, before, { model: 'fam-mini', stream: true });
      expect(line).to.include({ model: 'fam-mini', key_group: 'family', input_tokens: 11, output_tokens: 7, stream: true });
    });

    it('turns an upstream error status into the native error shape', async () => {
      chat.setHandler(() => ({ kind: 'json', status: 400, body: { error: { message: 'bad things', type: 'invalid_request_error', param: null, code: null } } }));
      try {
        const reply = await nativePost(gw.url, FAMILY_KEY, { model: 'fam-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
        expect(reply.status).to.equal(400);
        expect(await reply.json()).to.deep.include({ type: 'error', error: { type: 'invalid_request_error', message: 'bad things' } });
      } finally {
        chat.setHandler(chatHandler);
      }
    });

    it('still refuses count_tokens for the chat-completions group', async () => {
      const reply = await fetch(`${gw.url}/v1/messages/count_tokens`, {
        method: 'POST', headers: { 'x-api-key': FAMILY_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fam-5', messages: [{ role: 'user', content: 'x' }] }),
      });
      expect(reply.status).to.equal(400);
    });
  });
});

/** How many request log lines the gateway has written so far. */
function requestLineCount(gw: LibraryGateway): number {
  return gw.logLines.filter((l) => l.message === 'request').length;
}

/**
 * The first request log line, among those written after the first `before`, whose fields include
 * `match` (lines are written once a response closes, so an earlier test's line may still arrive).
 */
async function nextRequestLine(gw: LibraryGateway, before: number, match: Record<string, unknown>): Promise<Record<string, any>> {
  const find = () => gw.logLines.filter((l) => l.message === 'request').slice(before)
    .find((l) => Object.entries(match).every(([field, value]) => l[field] === value));
  await eventually(() => find() !== undefined);
  return find()!;
}
