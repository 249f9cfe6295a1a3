import { expect } from 'chai';
import { createAuth, extractApiKey, refuseRepeatedCredentials, type AuthHeaders } from '../../middleware/auth';
import { GatewayError } from '../../lib/http/errors';
import { hashSecret } from '../../lib/keys/secrets';
import { MemoryStore } from '../../lib/store/memory-store';
import { runMiddleware } from '../helpers/middleware';

const KEY = 'sk-cs4-unit-test-key-0001';
const OTHER = 'sk-cs4-unit-test-key-0002';

describe('auth: extractApiKey', () => {
  const cases: Array<[string, AuthHeaders, Record<string, string | string[]>, string | RegExp]> = [
    ['native: x-api-key', 'native', { 'x-api-key': KEY }, KEY],
    ['native: Bearer (native SDK 1.x)', 'native', { authorization: `Bearer ${KEY}` }, KEY],
    ['native: both, x-api-key wins', 'native', { 'x-api-key': KEY, authorization: `Bearer ${OTHER}` }, KEY],
    ['native: none', 'native', {}, /missing API key: send "x-api-key/],
    ['native: two x-api-key headers', 'native', { 'x-api-key': [KEY, OTHER] }, /exactly one x-api-key/],
    ['chat: Bearer', 'chat', { authorization: `Bearer ${KEY}` }, KEY],
    ['chat: bearer, any case', 'chat', { authorization: `bearer ${KEY}` }, KEY],
    ['chat: x-api-key only is refused naming the right header', 'chat', { 'x-api-key': KEY }, /Authorization: Bearer/],
    ['chat: Basic auth is not a key', 'chat', { authorization: 'Basic dXNlcjpwYXNz' }, /missing API key/],
    ['models: either', 'either', { authorization: `Bearer ${KEY}` }, KEY],
  ];
  it('names the route that refused x-api-key (POST /v1/responses is not the chat-completions route)', () => {
    expect(() => extractApiKey({ 'x-api-key': KEY }, 'chat', 'POST /v1/responses'))
      .to.throw(GatewayError, 'POST /v1/responses takes the key in the Authorization header, not x-api-key: "Authorization: Bearer <API_KEY>"');
  });

  for (const [name, accept, headers, expected] of cases) {
    it(name, () => {
      if (typeof expected === 'string') {
        expect(extractApiKey(headers, accept)).to.equal(expected);
      } else {
        expect(() => extractApiKey(headers, accept)).to.throw(GatewayError, expected).with.property('status', 401);
      }
    });
  }
});

describe('auth: refuseRepeatedCredentials', () => {
  const refusal = (rawHeaders: string[]) => {
    try {
      refuseRepeatedCredentials(rawHeaders);
      return null;
    } catch (err) {
      expect(err).to.be.instanceOf(GatewayError);
      expect((err as GatewayError).status).to.equal(401);
      return (err as GatewayError).message;
    }
  };

  it('lets one of each through, and headers that only look alike', () => {
    expect(refusal(['Host', 'gw', 'X-Api-Key', KEY, 'Authorization', `Bearer ${KEY}`, 'x-api-keys', 'a', 'authorization2', 'b'])).to.equal(null);
  });

  it('refuses a repeated header whatever the case of its names', () => {
    expect(refusal(['x-api-key', KEY, 'X-API-KEY', OTHER])).to.match(/exactly one x-api-key/);
    expect(refusal(['Authorization', `Bearer ${KEY}`, 'authorization', `Bearer ${OTHER}`])).to.match(/exactly one Authorization/);
  });
});

describe('auth middleware', () => {
  let store: MemoryStore;
  before(async () => {
    store = new MemoryStore();
    const common = { rateLimitPerMinute: 10, allowedModels: null, monthlyCreditCap: null };
    await store.createKey({ id: 'good', secret: { sha256: hashSecret(KEY), expiresAt: null }, last4: '0001', ...common });
    await store.createKey({ id: 'gone', secret: { sha256: hashSecret(OTHER), expiresAt: null }, last4: '0002', revoked: true, ...common });
  });

  it('puts the key (never its secret) on the context', async () => {
    const { error, ctx } = await runMiddleware(createAuth({ store, accept: 'native' }), { headers: { 'x-api-key': KEY } });
    expect(error).to.equal(undefined);
    expect(ctx.key?.id).to.equal('good');
    expect(ctx.keyGroup).to.equal('default');
    expect(JSON.stringify(ctx.key)).not.to.include(KEY);
  });

  const refused: Array<[string, string, RegExp]> = [
    ['an unknown key', 'sk-cs4-unit-test-key-9999', /^invalid API key$/],
    ['a key differing only in case', KEY.toUpperCase().replace('SK-CS4-', 'sk-cs4-'), /^invalid API key$/],
    ['a key without the prefix (no prefix named)', 'sk-ant-whatever', /^invalid API key$/],
    ['a revoked key', OTHER, /revoked/],
  ];
  for (const [name, secret, message] of refused) {
    it(`refuses ${name} with 401 and never echoes the secret`, async () => {
      const { error } = await runMiddleware(createAuth({ store, accept: 'native' }), { headers: { 'x-api-key': secret } });
      expect(error).to.be.instanceOf(GatewayError);
      expect(error.status).to.equal(401);
      expect(error.nativeType).to.equal('authentication_error');
      expect(error.chatCode).to.equal('invalid_api_key');
      expect(error.message).to.match(message);
      expect(error.message).not.to.include(secret);
    });
  }
});
