/**
 * The key is checked before the body is read: a caller without a valid key gets its 401 without the
 * gateway inflating, buffering or parsing anything it sent (gzip bombs, over-limit bodies, garbage).
 */
import { expect } from 'chai';
import zlib from 'node:zlib';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, isChatError, isNativeError, nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`authentication before the body is read (${storeKind} store)`, () => {
    let gw: TestGateway;
    const prefix = uniqueRedisPrefix('auth-first');
    before(async () => {
      gw = await startTestGateway({ store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined });
    });
    after(async () => {
      await gw.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    // 1 MiB of zeros inflating to 64 MiB, past the 32 MiB body limit: read, it would be a 413.
    const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));

    it('refuses a keyless gzip body with 401 without inflating it (native and chat shapes)', async () => {
      const native = await rawRequest(gw.url, {
        path: '/v1/messages', headers: [['content-type', 'application/json'], ['content-encoding', 'gzip'], ['anthropic-version', '2023-06-01']], body: bomb,
      });
      expect(native.status, native.text).to.equal(401);
      expect(isNativeError(native.json)).to.equal(true);
      const chat = await rawRequest(gw.url, { path: '/v1/chat/completions', headers: [['content-type', 'application/json'], ['content-encoding', 'gzip']], body: bomb });
      expect(chat.status, chat.text).to.equal(401);
      expect(isChatError(chat.json)).to.equal(true);
    });

    it('refuses a wrong key before judging the body (not a 400 for the garbage it sent)', async () => {
      const reply = await rawRequest(gw.url, { path: '/v1/responses', headers: chatHeaders('sk-cs4-no-such-key-000000'), body: '{"model": nope' });
      expect(reply.status, reply.text).to.equal(401);
      expect(gw.upstream.requests).to.have.length(0);
    });

    it('still reads, inflates and judges the body of an authenticated request', async () => {
      const body = zlib.gzipSync(Buffer.from(JSON.stringify({ model: 'model-haiku-4.5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })));
      const ok = await rawRequest(gw.url, { path: '/v1/messages', headers: [...nativeHeaders(KEYS.all), ['content-encoding', 'gzip']], body });
      expect(ok.status, ok.text).to.equal(200);
      const tooLarge = await rawRequest(gw.url, { path: '/v1/messages', headers: [...nativeHeaders(KEYS.all), ['content-encoding', 'gzip']], body: bomb });
      expect(tooLarge.status, tooLarge.text).to.equal(413);
    });
  });
}
