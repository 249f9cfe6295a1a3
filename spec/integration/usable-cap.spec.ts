/**
 * A hard cap usable to its last credit: a key driven with max_tokens far above what its cap pays, 50
 * requests in flight at a time (on two instances sharing Redis, or on one with the memory store),
 * spends at least 95 % of its cap and never more; its 80 % and 100 % alerts fire once each. The fake
 * upstream bills every reply its whole max_tokens (stop reason `max_tokens`), the costliest reply the
 * real API can give.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { nativeMessage, nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { startWebhookReceiver, waitFor, type WebhookReceiver } from '../helpers/webhook-receiver';

const SECRET = 'alerts-webhook-secret-for-usable-cap';
const KEY = 'sk-cs4-test-usable-cap-key-0031';
const CHAT_KEY = 'sk-cs4-test-usable-cap-chat-0031';
/** haiku: a worst case of 30,000 output tokens is 0.15 credits; the cap pays about three and a third. */
const CAP = 0.5;
const MAX_TOKENS = 30_000;

const handler: FakeHandler = (request) => request.body.stream
  ? { kind: 'stream', events: nativeTextEvents(['x'], { input_tokens: 12, output_tokens: request.body.max_tokens }, request.body.model).map((e) =>
    e.event === 'message_delta' ? { ...e, data: { ...(e.data as object), delta: { stop_reason: 'max_tokens', stop_sequence: null } } } : e) }
  : { kind: 'json', body: { ...nativeMessage('x', { input_tokens: 12, output_tokens: request.body.max_tokens }, request.body.model), stop_reason: 'max_tokens' } };

for (const kind of ['memory', 'redis'] as const) {
  describe(`a cap usable to its last credit (${kind} store${kind === 'redis' ? ', two instances' : ''})`, function () {
    this.timeout(60_000);
    let receiver: WebhookReceiver;
    let gateways: TestGateway[] = [];
    const prefix = uniqueRedisPrefix('usable-cap');

    before(async () => {
      receiver = await startWebhookReceiver(SECRET);
      const start = async (store?: GatewayStore) => startTestGateway({
        handler, store, env: { ALERTS_WEBHOOK_SECRET: SECRET },
        overrides: {
          keys: [{ id: 'usable', key: KEY, monthlyCreditCap: CAP, rateLimitPerMinute: 100_000 }],
          alerts: { webhookUrl: receiver.url, retryBaseDelayMs: 30, pollIntervalMs: 50, timeoutMs: 2000 },
        },
      });
      gateways = kind === 'redis'
        ? [await start(await connectTestRedisStore(prefix)), await start(await connectTestRedisStore(prefix))]
        : [await start()];
    });
    after(async () => {
      for (const gw of gateways) await gw.close();
      await receiver.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('spends at least 95 % of the cap and never more with 50 requests in flight; the 80 and 100 % alerts fire once', async () => {
      const month = utcMonth(Date.now());
      const store = gateways[0].gateway.store;
      const seen = { whole: 0, cut: 0, inFlight: 0, exhausted: 0 };
      for (let wave = 0; wave < 20 && seen.exhausted === 0; wave++) {
        const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => rawRequest(gateways[i % gateways.length].url, {
          method: 'POST', path: '/v1/messages', headers: nativeHeaders(KEY),
          body: { model: 'haiku', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: `wave ${wave}, request ${i}` }] },
        })));
        for (const reply of replies) {
          if (reply.status === 200) seen[reply.headers['x-gateway-max-tokens'] === undefined ? 'whole' : 'cut'] += 1;
          else if (reply.status === 402 && reply.headers['retry-after'] !== undefined) seen.inFlight += 1;
          else if (reply.status === 402) seen.exhausted += 1;
          else expect.fail(`unexpected status ${reply.status}: ${reply.text}`);
        }
        expect(await store.getMonthSpend('usable', month)).to.be.at.most(CAP);
      }
      expect(seen.whole).to.be.at.least(3);
      expect(seen.cut).to.be.at.least(1);
      expect(seen.exhausted).to.be.above(0);
      let spent = 0;
      const served = seen.whole + seen.cut;
      for (let i = 0; i < 300; i++) {
        const usage = await store.getUsage('usable', month);
        if (usage.reduce((sum, u) => sum + u.requests, 0) === served) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      spent = await store.getMonthSpend('usable', month);
      expect(spent / CAP).to.be.within(0.95, 1);
      await waitFor(() => receiver.delivered().has(`usable:${month}:100`), 10_000, 'the 100 % alert');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const fired = [...receiver.delivered().entries()].map(([id, calls]) => [id, calls.length]);
      expect(fired).to.deep.include.members([[`usable:${month}:50`, 1], [`usable:${month}:80`, 1], [`usable:${month}:100`, 1]]);
      expect(fired).to.have.length(3);
    });
  });
}

describe('a cap usable to its last credit, through the SDKs', function () {
  this.timeout(20_000);
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({
      handler,
      overrides: {
        keys: [
          { id: 'usable', key: KEY, monthlyCreditCap: 0.05, rateLimitPerMinute: 100_000 },
          { id: 'usable-chat', key: CHAT_KEY, monthlyCreditCap: 0.05, rateLimitPerMinute: 100_000 },
        ],
      },
    });
  });
  after(async () => gw.close());

  it('the Anthropic SDK (streaming) and the OpenAI SDK get a reply cut to the credit left, and the header saying so', async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: KEY, maxRetries: 0 });
    // 64,000 output tokens of haiku cost 0.32 credits: far more than the 0.05 cap.
    const { data: stream, response } = await anthropic.messages.stream({ model: 'haiku', max_tokens: 64_000, messages: [{ role: 'user', content: 'Write at length.' }] }).withResponse();
    const message = await stream.finalMessage();
    const lowered = Number(response.headers.get('x-gateway-max-tokens'));
    expect(lowered).to.be.within(16, 9999);
    expect(message.usage.output_tokens).to.equal(lowered);
    expect(message.stop_reason).to.equal('max_tokens');

    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: CHAT_KEY, maxRetries: 0 });
    const { data: completion, response: chatResponse } = await openai.chat.completions.create({
      model: 'haiku', max_completion_tokens: 64_000, messages: [{ role: 'user', content: 'Write at length.' }],
    }).withResponse();
    const chatLowered = Number(chatResponse.headers.get('x-gateway-max-tokens'));
    expect(chatLowered).to.be.within(16, 9999);
    expect(chatResponse.headers.get('x-gateway-warning')).to.include(`max_completion_tokens lowered from 64000 to ${chatLowered}`);
    expect(completion.choices[0].finish_reason).to.equal('length');
    for (const id of ['usable', 'usable-chat']) expect(await gw.gateway.store.getMonthSpend(id, utcMonth(Date.now()))).to.be.at.most(0.05);
  });
});
