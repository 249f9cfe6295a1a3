/**
 * The credit hold covers what goes upstream, not what the client typed: the stored conversation a
 * `previous_response_id` adds (Responses), `n` choices and an absent output limit (chat pass-through
 * key groups). Each attack of the audit, on both stores: a capped key cannot pass its cap.
 */
import { expect } from 'chai';
import { chatHandler } from '../helpers/fake-chat';
import { nativeMessage, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');
const CAPPED = 'sk-cs4-test-capped-hold-0001';
const FAMILY = 'sk-fam-test-capped-hold-0002';
/** Text of the reply the fake upstream stores through the first request: 100 KB, about 0.2 credits of haiku input. */
const LONG_REPLY = 'y'.repeat(100_000);

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`the credit hold covers what is sent (${storeKind} store)`, () => {
    let gw: TestGateway;
    let chat: FakeUpstream;
    const prefix = uniqueRedisPrefix('hold-sent');
    before(async () => {
      process.env.TEST_FAMILY_API_KEY = 'family-upstream-secret';
      chat = await startFakeUpstream(chatHandler);
      gw = await startTestGateway({
        store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined,
        handler: (request) => ({ kind: 'json', body: nativeMessage(LONG_REPLY, { input_tokens: 10, output_tokens: 10 }, request.body.model) }),
        overrides: {
          limits: { bodyBytes: 150_000 },
          models: [...shipped.models, { id: 'fam-5', upstreamModel: 'fam-large-2026', pricing: { inputPerMillion: 2, outputPerMillion: 8 } }],
          keyGroups: [{ id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', url: chat.url, apiKeyEnv: 'TEST_FAMILY_API_KEY' } }],
          keys: [
            { id: 'team-all', key: KEYS.all, rateLimitPerMinute: 100000 },
            { id: 'capped', key: CAPPED, monthlyCreditCap: 0.1, rateLimitPerMinute: 100000 },
            { id: 'family-capped', key: FAMILY, monthlyCreditCap: 0.04, rateLimitPerMinute: 100000 },
          ],
        },
      });
    });
    after(async () => {
      await gw.close();
      await chat.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    const responses = (body: object) => rawRequest(gw.url, { path: '/v1/responses', headers: chatHeaders(CAPPED), body });
    const chatPost = (body: object) => rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(FAMILY), body });

    it('previous_response_id: the stored conversation is held for, so parallel tiny requests naming it are refused', async () => {
      const first = await responses({ model: 'haiku', input: 'hi', max_output_tokens: 16 });
      expect(first.status, first.text).to.equal(200);
      const replies = await Promise.all(Array.from({ length: 10 }, () => responses({ model: 'haiku', input: 'more', max_output_tokens: 16, previous_response_id: first.json.id })));
      expect(replies.map((reply) => reply.status)).to.deep.equal(Array(10).fill(402));
      expect(gw.upstream.requests).to.have.length(1);
    });

    it('previous_response_id: the expanded conversation is held to the body limit (413)', async () => {
      const own = await rawRequest(gw.url, { path: '/v1/responses', headers: chatHeaders(), body: { model: 'haiku', input: 'hi', max_output_tokens: 16 } });
      expect(own.status, own.text).to.equal(200);
      const before = gw.upstream.requests.length;
      const reply = await rawRequest(gw.url, {
        path: '/v1/responses', headers: chatHeaders(), body: { model: 'haiku', input: 'z'.repeat(60_000), previous_response_id: own.json.id },
      });
      expect(reply.status, reply.text).to.equal(413);
      expect(reply.json.error.message).to.include('previous_response_id');
      expect(gw.upstream.requests).to.have.length(before);
    });

    it('chat pass-through: n past the bound is refused; n choices without a limit are held n times', async () => {
      const many = await chatPost({ model: 'fam-5', n: 128, messages: [{ role: 'user', content: 'hi' }] });
      expect(many.status, many.text).to.equal(400);
      expect(chat.requests).to.have.length(0);
      // 8 choices of the 4096-token default at 8 credits per million: 0.26 credits, past the 0.04 cap.
      // One choice would fit whole (0.033); held 8 times, the cap usable to its last credit lowers the
      // bound of each choice to what the cap pays for all 8.
      const eight = await chatPost({ model: 'fam-5', n: 8, messages: [{ role: 'user', content: 'hi' }] });
      expect(eight.status, eight.text).to.equal(200);
      const sent = chat.requests[chat.requests.length - 1].body;
      expect(sent.n).to.equal(8);
      expect(sent.max_completion_tokens).to.be.below(4096);
      expect(8 * sent.max_completion_tokens * 8 / 1e6).to.be.at.most(0.04);
      expect(eight.headers['x-gateway-max-tokens']).to.equal(String(sent.max_completion_tokens));
    });

    it('chat pass-through: a request without an output limit goes upstream with the max_tokens its hold counted', async () => {
      const reply = await chatPost({ model: 'fam-5', messages: [{ role: 'user', content: 'hi' }] });
      expect(reply.status, reply.text).to.equal(200);
      expect(chat.requests[chat.requests.length - 1].body.max_tokens).to.equal(4096);
    });
  });
}
