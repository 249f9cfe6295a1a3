/**
 * Each usage field the upstream reports changes the ledger by exactly its published price, through
 * the gateway, on the shipped catalogue (model-opus-4.8: every price set, fast mode 2x) and on a model
 * priced by input and output alone; the day totals, the request log and the month still add up.
 * Expected credits are written out from the published prices (docs/spend.md), not computed by the code
 * under test.
 */
import { expect } from 'chai';
import { utcMonth } from '../../lib/store/month';
import { nativeMessage, refusedBillingFields, reportedUsage, type FakeTokens } from '../helpers/fake-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';

const PLAIN = { id: 'model-plain', upstreamModel: 'model-plain', pricing: { inputPerMillion: 4, outputPerMillion: 20 } };
const BASE: FakeTokens = { input_tokens: 1000, output_tokens: 500 };

/** A streamed reply carrying `usage` as the upstream sends it: the input side in message_start, all of it in message_delta. */
function streamedEvents(model: string, usage: Record<string, unknown>) {
  return [
    { event: 'message_start', data: { type: 'message_start', message: { ...nativeMessage('', undefined, model), content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
}

describe('billing: each usage field at its published price, on the shipped catalogue and on a model priced by input and output alone', () => {
  let gw: TestGateway;
  let tokens: FakeTokens = BASE;
  let requests = 0;
  const month = () => utcMonth(Date.now());

  before(async () => {
    const shipped = testConfigObject('http://unused') as { models: unknown[] };
    gw = await startTestGateway({
      overrides: { models: [...shipped.models, PLAIN] },
      handler: (request) => {
        const refusal = refusedBillingFields(request.body);
        if (refusal) return { kind: 'json', status: 400, body: refusal };
        const usage = reportedUsage(request.body, tokens);
        return request.body.stream
          ? { kind: 'stream', events: streamedEvents(request.body.model, usage) }
          : { kind: 'json', body: { ...nativeMessage('ok', undefined, request.body.model), usage } };
      },
    });
  });
  after(async () => gw.close());

  /** Send one native request with `extra` body fields billed `billed`; the credits it added to the ledger. */
  async function billedFor(model: string, extra: Record<string, unknown>, billed: FakeTokens, stream = false): Promise<{ status: number; credits: number }> {
    tokens = billed;
    const before = await gw.gateway.store.getMonthSpend('team-all', month());
    const reply = await rawRequest(gw.url, {
      path: '/v1/messages', headers: nativeHeaders(),
      body: { model, max_tokens: 600, messages: [{ role: 'user', content: 'hi' }], stream, ...extra },
    });
    requests += 1;
    for (let i = 0; i < 200; i++) {
      const usage = await gw.gateway.store.getUsage('team-all', month());
      if (usage.reduce((sum, u) => sum + u.requests, 0) >= requests) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return { status: reply.status, credits: (await gw.gateway.store.getMonthSpend('team-all', month())) - before };
  }

  // [field, request fields, tokens billed, credits on model-opus-4.8, credits on model-plain (input 4, output 20)]
  const cases: Array<[string, Record<string, unknown>, FakeTokens, number, number]> = [
    ['input and output', {}, BASE, (1000 * 5 + 500 * 25) / 1e6, (1000 * 4 + 500 * 20) / 1e6],
    ['cache reads (0.1x input)', {}, { ...BASE, cache_read_input_tokens: 10_000 }, (1000 * 5 + 500 * 25 + 10_000 * 0.5) / 1e6, (1000 * 4 + 500 * 20 + 10_000 * 0.4) / 1e6],
    ['5-minute cache writes (1.25x input)', {}, { ...BASE, cache_creation_input_tokens: 10_000 }, (1000 * 5 + 500 * 25 + 10_000 * 6.25) / 1e6, (1000 * 4 + 500 * 20 + 10_000 * 5) / 1e6],
    ['1-hour cache writes (2x input)', {}, { ...BASE, cache_creation_input_tokens: 10_000, cache_1h_input_tokens: 10_000 }, (1000 * 5 + 500 * 25 + 10_000 * 10) / 1e6, (1000 * 4 + 500 * 20 + 10_000 * 8) / 1e6],
    ['web searches (10 per 1,000)', { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }, { ...BASE, web_search_requests: 3 },
      (1000 * 5 + 500 * 25) / 1e6 + 0.03, (1000 * 4 + 500 * 20) / 1e6 + 0.03],
    ['web fetches (tokens only)', { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }, { ...BASE, web_fetch_requests: 2 }, (1000 * 5 + 500 * 25) / 1e6, (1000 * 4 + 500 * 20) / 1e6],
    ['data residency (inference_geo us: 1.1x)', { inference_geo: 'us' }, { ...BASE, cache_read_input_tokens: 10_000 },
      (1000 * 5 + 500 * 25 + 10_000 * 0.5) / 1e6 * 1.1, (1000 * 4 + 500 * 20 + 10_000 * 0.4) / 1e6 * 1.1],
    ['compaction iterations (left out of the top-level counts)', { context_management: { edits: [{ type: 'compact_20260112' }] } },
      { ...BASE, compaction: { input_tokens: 180_000, output_tokens: 3500 } },
      (181_000 * 5 + 4000 * 25) / 1e6, (181_000 * 4 + 4000 * 20) / 1e6],
  ];
  for (const [field, extra, billed, opus, plain] of cases) {
    for (const stream of [false, true]) {
      it(`${field}${stream ? ', streamed' : ''}`, async () => {
        const onOpus = await billedFor('model-opus-4.8', extra, billed, stream);
        expect(onOpus.status).to.equal(200);
        expect(onOpus.credits).to.be.closeTo(opus, 1e-9);
        const onPlain = await billedFor('model-plain', extra, billed, stream);
        expect(onPlain.status).to.equal(200);
        expect(onPlain.credits).to.be.closeTo(plain, 1e-9);
      });
    }
  }

  it('fast mode at the model\'s multiplier (model-opus-4.8: 2x, cache prices on top); refused upstream on a model without it, and billed nothing', async () => {
    const fast = await billedFor('model-opus-4.8', { speed: 'fast' }, { ...BASE, cache_read_input_tokens: 10_000 });
    expect(fast.status).to.equal(200);
    expect(fast.credits).to.be.closeTo((1000 * 5 + 500 * 25 + 10_000 * 0.5) / 1e6 * 2, 1e-9);
    const refused = await billedFor('model-plain', { speed: 'fast' }, BASE);
    expect(refused.status).to.equal(400);
    expect(refused.credits).to.equal(0);
  });

  it('the day totals, the request log and the month add up', async () => {
    const [monthTotals] = (await gw.gateway.store.getUsage('team-all', month())).filter((u) => u.model === 'model-plain');
    const days = (await gw.gateway.store.getDailyUsage('team-all', month())).filter((d) => d.model === 'model-plain');
    expect(days.reduce((sum, d) => sum + d.credits, 0)).to.be.closeTo(monthTotals.credits, 1e-9);
    const from = Date.parse(`${month()}-01T00:00:00Z`);
    const log = await gw.gateway.store.readRequestLog(from, Date.now() + 1000, null, 10_000);
    const logged = log.records.filter((r) => r.keyId === 'team-all').reduce((sum, r) => sum + r.credits, 0);
    expect(logged).to.be.closeTo(await gw.gateway.store.getMonthSpend('team-all', month()), 1e-9);
  });

  it('an unknown usage field is logged once per name, and the fields known are billed', async () => {
    gw.upstream.setHandler((request) => ({
      kind: 'json', body: { ...nativeMessage('ok', undefined, request.body.model), usage: { ...reportedUsage(request.body, BASE), carbon_grams: 2 } },
    }));
    for (let i = 0; i < 2; i++) {
      const billed = await billedFor('model-opus-4.8', {}, BASE);
      expect(billed.credits).to.be.closeTo((1000 * 5 + 500 * 25) / 1e6, 1e-9);
    }
    const warnings = gw.logLines.filter((line) => line.unpriced_usage !== undefined);
    expect(warnings.map((line) => [line.level, line.unpriced_usage])).to.deep.equal([['warn', 'usage.carbon_grams']]);
  });
});
