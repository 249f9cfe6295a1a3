import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { createHostCheck } from '../../middleware/host-check';
import { mapBodyParserError } from '../../middleware/json-body';
import { createModelWhitelist } from '../../middleware/model-access';
import { createNotFound } from '../../middleware/not-found';
import { createResolveAlias } from '../../middleware/resolve-alias';
import { chatCompletionsSchema, createValidateBody, messagesSchema } from '../../middleware/validate-body';
import { detectFormat } from '../../middleware/request-context';
import { fakeContext, runMiddleware } from '../helpers/middleware';
import type { KeyRecord } from '../../lib/store/types';

const config = parseConfig(
  {
    upstream: { url: 'http://127.0.0.1:9' },
    models: [
      { id: 'model-sonnet-4.6', upstreamModel: 'upstream-sonnet', pricing: { inputPerMillion: 3, outputPerMillion: 15 } },
      { id: 'model-haiku-4.5', upstreamModel: 'upstream-haiku', pricing: { inputPerMillion: 1, outputPerMillion: 5 } },
    ],
    aliases: { sonnet: 'model-sonnet-4.6' },
  },
  {},
);
const catalogue = createCatalogue(config);
const key = (allowedModels: string[] | null): KeyRecord => ({
  id: 'k', name: 'k', last4: 'abcd', createdAt: '', revoked: false, rateLimitPerMinute: 1, allowedModels, monthlyCreditCap: null, keyGroup: 'default',
});

describe('host check', () => {
  it('passes every host when no baseUrl is configured', async () => {
    const { error } = await runMiddleware(createHostCheck({ baseUrl: null }), { headers: { host: 'anything' } });
    expect(error).to.equal(undefined);
  });
  it('passes the configured host, case-insensitively', async () => {
    const { error } = await runMiddleware(createHostCheck({ baseUrl: 'https://gw.example.com' }), { headers: { host: 'GW.example.com' } });
    expect(error).to.equal(undefined);
  });
  it('refuses another host with 421 misdirected_request', async () => {
    const { error } = await runMiddleware(createHostCheck({ baseUrl: 'https://gw.example.com' }), { headers: { host: 'evil.example' } });
    expect(error).to.include({ status: 421, nativeType: 'invalid_request_error', chatCode: 'misdirected_request' });
  });
});

describe('path check (not found)', () => {
  const notFound = createNotFound({ routes: ['POST /v1/messages', 'POST /v1/chat/completions', 'POST /v1/responses', 'GET /v1/responses/{id}', 'DELETE /v1/responses/{id}', 'GET /v1/models', 'GET /healthz'] });
  const cases: Array<[string, string, RegExp]> = [
    ['a path without /v1', '/messages', /did you mean \/v1\/messages\?/],
    ['a chat path without /v1', '/chat/completions', /did you mean \/v1\/chat\/completions\?/],
    ['a doubled /v1', '/v1/v1/models', /did you mean \/v1\/models\?/],
    ['an unknown path', '/v2/whatever', /the API lives under \/v1/],
  ];
  for (const [name, path, message] of cases) {
    it(`answers ${name} with 404 suggesting the /v1 path`, async () => {
      const { error } = await runMiddleware(notFound, { method: 'POST', path });
      expect(error).to.include({ status: 404, nativeType: 'not_found_error', chatCode: 'not_found' });
      expect(error.message).to.match(message);
    });
  }
  it('lists every /v1 route without a parameter, /v1/responses included, for an unknown path', async () => {
    const { error } = await runMiddleware(notFound, { method: 'POST', path: '/v2/whatever' });
    expect(error.message).to.contain('(POST /v1/messages, POST /v1/chat/completions, POST /v1/responses, GET /v1/models)');
  });
  it('suggests /v1/responses to a Responses client whose base URL lacks /v1', async () => {
    const { error } = await runMiddleware(notFound, { method: 'POST', path: '/responses' });
    expect(error.message).to.match(/did you mean \/v1\/responses\?/);
  });
  it('answers a known path asked with another method with 405 and Allow (RFC 9110)', async () => {
    const { error } = await runMiddleware(notFound, { method: 'GET', path: '/v1/messages' });
    expect(error).to.include({ status: 405, nativeType: 'invalid_request_error', chatCode: 'method_not_allowed' });
    expect(error.headers).to.deep.equal({ allow: 'POST' });
    expect(error.message).to.match(/use POST$/);
    const stored = await runMiddleware(notFound, { method: 'POST', path: '/v1/responses/resp_123' });
    expect(stored.error).to.include({ status: 405 });
    expect(stored.error.headers).to.deep.equal({ allow: 'GET, DELETE, HEAD' });
  });
  it('detects the chat format by path', () => {
    expect(detectFormat('/v1/chat/completions')).to.equal('chat');
    expect(detectFormat('/chat/completions')).to.equal('chat');
    expect(detectFormat('/v1/messages')).to.equal('native');
  });
});

describe('JSON body errors', () => {
  const table: Array<[string, number, string]> = [
    ['entity.too.large', 413, 'request_too_large'],
    ['entity.parse.failed', 400, 'invalid_request_error'],
    ['charset.unsupported', 415, 'unsupported_media_type'],
    ['request.aborted', 400, 'invalid_request_error'],
  ];
  for (const [type, status, chatCode] of table) {
    it(`maps ${type} to ${status} ${chatCode}`, () => {
      expect(mapBodyParserError({ type }, 1024)).to.include({ status, chatCode });
    });
  }
});

describe('body validation', () => {
  const messages = createValidateBody(messagesSchema);
  const chat = createValidateBody(chatCompletionsSchema);
  const good = { model: 'sonnet', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  it('passes unknown fields, roles and content block types (the upstream judges them)', async () => {
    const body = {
      ...good, thinking: { type: 'enabled', budget_tokens: 1024 }, context_management: { edits: [] }, system: 7,
      messages: [{ role: 'system', content: [{ type: 'future_block', x: 1 }] }, { role: 'user' }, 'not even an object'],
    };
    const { error } = await runMiddleware(messages, { body });
    expect(error).to.equal(undefined);
  });
  const bad: Array<[string, unknown, RegExp, string]> = [
    ['missing max_tokens', { model: 'x', messages: [] }, /^max_tokens: field required$/, 'max_tokens'],
    ['max_tokens 0', { ...good, max_tokens: 0 }, /^max_tokens: must be >= 1$/, 'max_tokens'],
    ['messages not an array', { ...good, messages: { role: 'user' } }, /^messages: must be array$/, 'messages'],
    ['a string stream', { ...good, stream: 'true' }, /^stream: must be boolean$/, 'stream'],
    ['a string max_tokens', { ...good, max_tokens: '10' }, /^max_tokens: must be integer$/, 'max_tokens'],
    ['an array body', [good], /request body must be a JSON object/, '(body)'],
  ];
  for (const [name, body, message, param] of bad) {
    it(`refuses ${name} with 400 naming the field`, async () => {
      const { error } = await runMiddleware(messages, { body });
      expect(error).to.include({ status: 400, param });
      expect(error.message).to.match(message);
    });
  }
  it('refuses a chat body without messages', async () => {
    const { error } = await runMiddleware(chat, { body: { model: 'x' } });
    expect(error).to.include({ status: 400, param: 'messages' });
  });
  it('accepts unknown chat fields (compatibility rule 2)', async () => {
    const { error } = await runMiddleware(chat, { body: { model: 'x', messages: [{ role: 'user', content: 'hi' }], logit_bias: { 1: 2 }, seed: 3 } });
    expect(error).to.equal(undefined);
  });
});

describe('alias resolution and model whitelist', () => {
  it('resolves an alias to its canonical entry before whitelisting', async () => {
    const { error, ctx } = await runMiddleware(createResolveAlias({ catalogue }), { body: { model: 'sonnet', stream: true } });
    expect(error).to.equal(undefined);
    expect(ctx.model?.id).to.equal('model-sonnet-4.6');
    expect(ctx.model?.upstreamModel).to.equal('upstream-sonnet');
    expect(ctx.requestedModel).to.equal('sonnet');
    expect(ctx.stream).to.equal(true);
  });
  it('refuses a model outside the catalogue with 404 model_not_found', async () => {
    const { error } = await runMiddleware(createResolveAlias({ catalogue }), { body: { model: 'upstream-sonnet' } });
    expect(error).to.include({ status: 404, nativeType: 'not_found_error', chatCode: 'model_not_found' });
  });
  it('lets a key use an allowed model (alias resolved first)', async () => {
    const ctx = fakeContext({ key: key(['model-sonnet-4.6']), model: catalogue.resolve('sonnet') });
    expect((await runMiddleware(createModelWhitelist(), {}, ctx)).error).to.equal(undefined);
  });
  it('lets a key without allowedModels use every model', async () => {
    const ctx = fakeContext({ key: key(null), model: catalogue.resolve('model-haiku-4.5') });
    expect((await runMiddleware(createModelWhitelist(), {}, ctx)).error).to.equal(undefined);
  });
  it('refuses a model the key may not use with 403 model_not_allowed', async () => {
    const ctx = fakeContext({ key: key(['model-haiku-4.5']), model: catalogue.resolve('sonnet') });
    const { error } = await runMiddleware(createModelWhitelist(), {}, ctx);
    expect(error).to.include({ status: 403, nativeType: 'permission_error', chatCode: 'model_not_allowed' });
  });
});
