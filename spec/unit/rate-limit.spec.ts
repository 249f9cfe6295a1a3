import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { createApiKey, rotateApiKey, setKeyLimits } from '../../lib/store/key-admin';
import type { GatewayStore } from '../../lib/store/types';
import { formatGoDuration, formatRfc3339, secondsUntil } from '../../middleware/rate-limit';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix } from '../helpers/redis';
import type { RedisStore } from '../../lib/store/redis-store';

const LIMITED = 'sk-cs4-test-limited-key-0010';
const OTHER = 'sk-cs4-test-other-key-00011';

function keys(limit: number) {
  return [
    { id: 'limited', key: LIMITED, rateLimitPerMinute: limit },
    { id: 'other', key: OTHER, rateLimitPerMinute: limit },
  ];
}

function nativeRequest(url: string, secret: string, body: Record<string, unknown> = {}) {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

function chatRequest(url: string, secret: string) {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'haiku', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('rate limit header formats', () => {
  const goDurations: Array<[number, string]> = [[0, '0ms'], [12, '12ms'], [999, '999ms'], [1000, '1s'], [1001, '2s'], [59_000, '59s'], [60_000, '1m0s'], [90_500, '1m31s'], [3_600_000, '1h0m0s']];
  for (const [ms, text] of goDurations) {
    it(`formats ${ms} ms as the Go duration ${text}`, () => expect(formatGoDuration(ms)).to.equal(text));
  }

  it('formats the reset instant as RFC 3339 with whole seconds, rounded up', () => {
    expect(formatRfc3339(Date.parse('2025-07-01T12:00:04.001Z'))).to.equal('2025-07-01T12:00:05Z');
    expect(formatRfc3339(Date.parse('2025-07-01T12:00:04.000Z'))).to.equal('2025-07-01T12:00:04Z');
  });

  it('retry-after is whole seconds until the reset, at least 1', () => {
    expect(secondsUntil(new Date(10_500), 0)).to.equal(11);
    expect(secondsUntil(new Date(100), 100)).to.equal(1);
  });
});

for (const kind of ['memory', 'redis'] as const) {
  describe(`rate limit per key (${kind} store)`, () => {
    let gw: TestGateway;
    let redis: RedisStore | undefined;

    async function start(limit: number) {
      redis = kind === 'redis' ? await connectTestRedisStore() : undefined;
      gw = await startTestGateway({ overrides: { keys: keys(limit) }, store: redis as GatewayStore | undefined });
    }
    afterEach(async () => {
      await gw?.close();
      if (redis) await deleteRedisPrefix(redis.prefix);
    });

    it('lets exactly the limit through, with both header families on each success, then 429s in the native shape', async () => {
      await start(3);
      for (const remaining of [2, 1, 0]) {
        const res = await nativeRequest(gw.url, LIMITED);
        expect(res.status).to.equal(200);
        expect(res.headers.get('anthropic-ratelimit-requests-limit')).to.equal('3');
        expect(res.headers.get('anthropic-ratelimit-requests-remaining')).to.equal(String(remaining));
        expect(res.headers.get('x-ratelimit-limit-requests')).to.equal('3');
        expect(res.headers.get('x-ratelimit-remaining-requests')).to.equal(String(remaining));
        const reset = Date.parse(res.headers.get('anthropic-ratelimit-requests-reset')!);
        expect(reset).to.be.greaterThan(Date.now()).and.at.most(Date.now() + 61_000);
        expect(res.headers.get('x-ratelimit-reset-requests')).to.match(/^(\d+s|1m0s|\d+ms)$/);
        await res.arrayBuffer();
      }
      const refused = await nativeRequest(gw.url, LIMITED);
      expect(refused.status).to.equal(429);
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).to.be.within(1, 60);
      expect(refused.headers.get('anthropic-ratelimit-requests-remaining')).to.equal('0');
      expect(refused.headers.get('x-ratelimit-remaining-requests')).to.equal('0');
      const body = (await refused.json()) as any;
      expect(body.type).to.equal('error');
      expect(body.error.type).to.equal('rate_limit_error');
      expect(body.error.message).to.match(/3 requests per minute/);
      expect(gw.upstream.requests).to.have.length(3);
    });

    it('answers the chat route in its own shape (rate_limit_exceeded) and leaves other keys alone', async () => {
      await start(1);
      expect((await chatRequest(gw.url, LIMITED)).status).to.equal(200);
      const refused = await chatRequest(gw.url, LIMITED);
      expect(refused.status).to.equal(429);
      expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
      expect(refused.headers.get('x-ratelimit-limit-requests')).to.equal('1');
      const body = (await refused.json()) as any;
      expect(body.error).to.include({ code: 'rate_limit_exceeded', type: 'requests' });
      const other = await chatRequest(gw.url, OTHER);
      expect(other.status).to.equal(200);
      await other.arrayBuffer();
    });

    it('counts every secret of a rotated key against one limit, and reads a changed limit on the next request', async () => {
      await start(2);
      // A key made at run time: config.json sets the secret and limits of the keys it declares.
      const made = await createApiKey(gw.gateway.store, { id: 'made', rateLimitPerMinute: 2 });
      const rotated = await rotateApiKey(gw.gateway.store, 'made');
      expect((await nativeRequest(gw.url, made.secret)).status).to.equal(200);
      expect((await nativeRequest(gw.url, rotated.secret)).status).to.equal(200);
      expect((await nativeRequest(gw.url, made.secret)).status).to.equal(429);
      await setKeyLimits(gw.gateway.store, 'made', { rateLimitPerMinute: 4 });
      const res = await nativeRequest(gw.url, rotated.secret);
      expect(res.status).to.equal(200);
      expect(res.headers.get('anthropic-ratelimit-requests-limit')).to.equal('4');
      expect(await gw.gateway.store.findKeyBySecretHash(hashSecret(made.secret))).not.to.equal(null);
    });

    it('limits GET /v1/models too, and never counts a request whose key is refused', async () => {
      await start(1);
      const bad = await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': 'sk-cs4-not-a-known-key-000' } });
      expect(bad.status).to.equal(401);
      expect(bad.headers.get('x-ratelimit-limit-requests')).to.equal(null);
      const ok = await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': LIMITED } });
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('anthropic-ratelimit-requests-remaining')).to.equal('0');
      expect((await fetch(`${gw.url}/v1/models`, { headers: { 'x-api-key': LIMITED } })).status).to.equal(429);
    });
  });
}
