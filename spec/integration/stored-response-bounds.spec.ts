/**
 * What a key can make the gateway keep through `store: true`, on both stores: a conversation past the
 * body limit is not stored, and one key holds at most `responses.maxStoredBytesPerKey`; past it a new
 * response is not stored (the reply still goes out), and other keys are not affected.
 */
import { expect } from 'chai';
import { nativeMessage } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`stored response bounds (${storeKind} store)`, () => {
    let gw: TestGateway;
    const prefix = uniqueRedisPrefix('stored-bounds');
    before(async () => {
      gw = await startTestGateway({
        store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined,
        // 'big' gets a 160 KB reply (past the 150 KB body limit), anything else 100 KB.
        handler: (request) => {
          const big = JSON.stringify(request.body.messages).includes('big');
          return { kind: 'json', body: nativeMessage('y'.repeat(big ? 160_000 : 100_000), { input_tokens: 10, output_tokens: 10 }, request.body.model) };
        },
        overrides: { limits: { bodyBytes: 150_000 }, responses: { maxStoredBytesPerKey: 250_000 } },
      });
    });
    after(async () => {
      await gw.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    const create = async (key: string, input: string) => {
      const reply = await rawRequest(gw.url, { path: '/v1/responses', headers: chatHeaders(key), body: { model: 'haiku', input, max_output_tokens: 16 } });
      expect(reply.status, reply.text.slice(0, 200)).to.equal(200);
      return reply.json.id as string;
    };
    const stored = async (key: string, id: string) => (await rawRequest(gw.url, { method: 'GET', path: `/v1/responses/${id}`, headers: chatHeaders(key) })).status;

    it('does not store a conversation larger than the body limit', async () => {
      const id = await create(KEYS.haikuOnly, 'big');
      expect(await stored(KEYS.haikuOnly, id)).to.equal(404);
    });

    it('stores up to maxStoredBytesPerKey per key, then nothing more for that key only', async () => {
      const first = await create(KEYS.all, 'one');
      const second = await create(KEYS.all, 'two');
      expect(await stored(KEYS.all, first)).to.equal(200);
      expect(await stored(KEYS.all, second)).to.equal(404);
      const other = await create(KEYS.haikuOnly, 'three');
      expect(await stored(KEYS.haikuOnly, other)).to.equal(200);
    });
  });
}
