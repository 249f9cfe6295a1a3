import { install as installFakeTimers, type Clock as FakeClock } from '@sinonjs/fake-timers';
import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { utcMonth } from '../../lib/store/month';
import type { Request, Response } from 'express';
import type { GatewayStore } from '../../lib/store/types';
import { EventEmitter } from 'node:events';
import { boundInputTokens, boundServerToolRequests, createReservationRenewer, createCreditReservation, maxOutputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { batchWorstCase, estimateWorstCase, fitOutputTokens, worstCaseCredits } from '../../lib/billing/worst-case';
import { nativeMessage, nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';

const CAPPED = 'sk-cs4-test-capped-key-0020';
const FREE = 'sk-cs4-test-uncapped-key-21';
const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
const catalogue = createCatalogue(config);
const haiku = catalogue.resolve('model-haiku-4.5')!;

function post(url: string, path: string, secret: string, body: Record<string, unknown>, signal?: AbortSignal) {
  const chat = path.includes('chat');
  return fetch(`${url}${path}`, {
    method: 'POST',
    signal,
    headers: chat
      ? { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }
      : { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'haiku', messages: [{ role: 'user', content: 'hi' }], ...(chat ? {} : { max_tokens: 16 }), ...body }),
  });
}

describe('credit reservation: the worst case', () => {
  it('bounds input tokens by body bytes per token plus the overhead', () => {
    expect(boundInputTokens(1000, { bytesPerInputToken: 1, overheadInputTokens: 1024, webSearchesPerRequest: 10, minOutputTokens: 16 })).to.equal(2024);
    expect(boundInputTokens(1001, { bytesPerInputToken: 2, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 })).to.equal(501);
  });

  it('prices input at the model\'s highest input price (a 1-hour cache write costs more than plain input)', () => {
    // haiku: input 1, cache write 1.25 (1 hour: 2), cache read 0.1, output 5 credits per million tokens, 0.01 a web search
    expect(priceWorstCase(haiku, 1_000_000, 0)).to.equal(2);
    expect(priceWorstCase(haiku, 0, 1_000_000)).to.equal(5);
    expect(priceWorstCase(haiku, 0, 0, { webSearch: 5, webFetch: 0, codeExecution: 0 })).to.equal(0.05);
  });

  it('prices the rate the body asks for (fast mode, a pinned inference_geo) and a compaction step', () => {
    const opus = catalogue.resolve('model-opus-4.8')!; // fast mode 2x
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 };
    const plain = estimateWorstCase(opus, {}, 1000, 100, reservation);
    expect(worstCaseCredits(plain)).to.be.closeTo(priceWorstCase(opus, 1000, 100), 1e-12);
    expect(worstCaseCredits(estimateWorstCase(opus, { speed: 'fast' }, 1000, 100, reservation))).to.be.closeTo(2 * worstCaseCredits(plain), 1e-12);
    expect(worstCaseCredits(estimateWorstCase(opus, { inference_geo: 'us' }, 1000, 100, reservation))).to.be.closeTo(1.1 * worstCaseCredits(plain), 1e-12);
    expect(worstCaseCredits(estimateWorstCase(haiku, { speed: 'fast' }, 1000, 100, reservation)), 'no fast mode on haiku')
      .to.be.closeTo(priceWorstCase(haiku, 1000, 100), 1e-12);
    const compacting = { context_management: { edits: [{ type: 'compact_20260112' }] } };
    expect(worstCaseCredits(estimateWorstCase(opus, compacting, 1000, 100, reservation))).to.be.closeTo(2 * worstCaseCredits(plain), 1e-12);
    // A batch request: the batch rate (0.5x) on its tokens.
    const params = { model: 'opus', max_tokens: 100, messages: [] };
    expect(batchWorstCase(opus, params, 4096, reservation).credits).to.be.closeTo(priceWorstCase(opus, Buffer.byteLength(JSON.stringify(params)), 100) / 2, 1e-12);
  });

  it('cuts the output to what a hold pays, never past it', () => {
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 };
    const worst = estimateWorstCase(haiku, {}, 1000, 4000, reservation);
    for (const credits of [0.0021, 0.01, 0.0123457]) {
      const tokens = fitOutputTokens(worst, credits);
      expect(worstCaseCredits(worst, tokens)).to.be.at.most(credits);
      // One token more would not fit (or fit exactly: the cut errs a hair under an exact quotient).
      if (tokens < 4000) expect(worstCaseCredits(worst, tokens + 1)).to.be.above(credits - 1e-12);
    }
    expect(fitOutputTokens(worst, 0.0019), 'not even the input').to.equal(0);
    expect(fitOutputTokens(worst, 1), 'at most max_tokens').to.equal(4000);
  });

  it('holds web searches, web fetches and code executions for each such server tool offered: its max_uses, else the configured default', () => {
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 };
    const none = { webSearch: 0, webFetch: 0, codeExecution: 0 };
    expect(boundServerToolRequests({ tools: [{ name: 'Bash', input_schema: {} }] }, reservation)).to.deep.equal(none);
    expect(boundServerToolRequests({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }, reservation)).to.deep.equal({ ...none, webSearch: 3 });
    expect(boundServerToolRequests({ tools: [{ type: 'web_search_20260101', name: 'web_search' }, null, 'x'] }, reservation)).to.deep.equal({ ...none, webSearch: 10 });
    expect(boundServerToolRequests({
      tools: [{ type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 4 }, { type: 'code_execution_20250825', name: 'code_execution' }, { type: 'tool_search_tool_regex_20251119', name: 'tool_search' }],
    }, reservation)).to.deep.equal({ webSearch: 0, webFetch: 4, codeExecution: 10 });
    expect(boundServerToolRequests({ tools: 'not an array' }, reservation)).to.deep.equal(none);
    expect(boundServerToolRequests(null, reservation)).to.deep.equal(none);
  });

  it('prices web fetches and code executions in the worst case at the model\'s per-request prices', () => {
    const priced = { ...haiku, pricing: { ...haiku.pricing, webFetchPerRequest: 0.1, codeExecutionPerRequest: 0.05 } };
    expect(priceWorstCase(priced, 0, 0, { webSearch: 1, webFetch: 2, codeExecution: 3 })).to.be.closeTo(0.01 + 0.2 + 0.15, 1e-12);
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 };
    const body = { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch', max_uses: 5 }] };
    const plain = estimateWorstCase(priced, {}, 1000, 100, reservation);
    expect(estimateWorstCase(priced, body, 1000, 100, reservation).fixedCredits - plain.fixedCredits).to.be.closeTo(0.5, 1e-12);
  });

  it('takes max_tokens from the route\'s own field, else the model\'s output ceiling', () => {
    const req = (body: unknown) => ({ body }) as never;
    expect(maxOutputTokens(req({ max_tokens: 300 }), 'native', haiku, catalogue)).to.equal(300);
    expect(maxOutputTokens(req({ max_tokens: 300, max_completion_tokens: 200 }), 'chat', haiku, catalogue)).to.equal(200);
    expect(maxOutputTokens(req({ max_tokens: 300 }), 'chat', haiku, catalogue)).to.equal(300);
    expect(maxOutputTokens(req({}), 'chat', haiku, catalogue)).to.equal(64000);
    expect(maxOutputTokens(req({ max_output_tokens: 700, max_tokens: 300 }), 'responses', haiku, catalogue)).to.equal(700);
    expect(maxOutputTokens(req({ max_tokens: 300 }), 'responses', haiku, catalogue)).to.equal(64000);
  });

  it('bounds the input by the body size as received (set by the JSON body step), else by the body serialised', async () => {
    const reserved: number[] = [];
    const store = {
      async reserveCredits(keyId: string, month: string, credits: number) {
        reserved.push(credits);
        return { ok: true, reservation: { id: 'r', keyId, month, credits }, spent: 0 };
      },
      async renewReservation() {
        return true;
      },
    } as unknown as GatewayStore;
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 };
    const step = createCreditReservation({ store, catalogue, format: 'native', reservation, reservationTtlMs: 1000 });
    const body = { model: 'haiku', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
    const run = (bodyBytes: number | undefined) => new Promise<void>((resolve, reject) => {
      const ctx = { key: { id: 'k', monthlyCreditCap: null }, model: haiku, bodyBytes };
      const res = { locals: { gateway: ctx }, once: (_event: string, close: () => void) => setImmediate(close) };
      step({ body } as Request, res as unknown as Response, (err?: unknown) => (err ? reject(err) : resolve()));
    });
    await run(5000); // e.g. a pretty-printed body: its bytes on the wire are what the bound counts
    await run(undefined);
    expect(reserved).to.have.length(2);
    expect(reserved[0]).to.be.closeTo(priceWorstCase(haiku, 5000, 1), 1e-12);
    expect(reserved[1]).to.be.closeTo(priceWorstCase(haiku, Buffer.byteLength(JSON.stringify(body)), 1), 1e-12);
  });

  it('releases the hold at once when the client went away while it was being made', async () => {
    const settled: Array<{ id: string; credits: number; inputTokens: number; outputTokens: number }> = [];
    let finishReserving!: () => void;
    const store = {
      async reserveCredits(keyId: string, month: string, credits: number) {
        await new Promise<void>((resolve) => (finishReserving = resolve)); // a store round trip
        return { ok: true, reservation: { id: 'late', keyId, month, credits }, spent: 0 };
      },
      async settleCredits(reservation: { id: string }, usage: { credits: number; inputTokens: number; outputTokens: number }) {
        settled.push({ id: reservation.id, credits: usage.credits, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens });
      },
      async renewReservation() {
        throw new Error('a released hold must not be renewed');
      },
    } as unknown as GatewayStore;
    const step = createCreditReservation({ store, catalogue, format: 'native', reservation: { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10, minOutputTokens: 16 }, reservationTtlMs: 1000 });
    const ctx: Record<string, unknown> = { key: { id: 'k', monthlyCreditCap: null }, model: haiku, bodyBytes: 10 };
    const listeners: string[] = [];
    const res = { locals: { gateway: ctx }, destroyed: false, once: (event: string) => listeners.push(event) };
    let nextCalled = false;
    const done = step({ body: { max_tokens: 1 } } as Request, res as unknown as Response, () => (nextCalled = true)) as unknown as Promise<void>;
    await new Promise((resolve) => setImmediate(resolve));
    res.destroyed = true; // the client hangs up during the round trip
    finishReserving();
    await done;
    expect(settled).to.deep.equal([{ id: 'late', credits: 0, inputTokens: 0, outputTokens: 0 }]);
    expect(nextCalled, 'the request goes no further').to.equal(false);
    expect(ctx.reservation).to.equal(undefined);
    expect(listeners, 'no renewal registered').to.deep.equal([]);
  });
});

describe('monthly credit cap through the gateway', () => {
  let gw: TestGateway;
  let now = Date.parse('2025-01-31T12:00:00Z');
  const clock = () => now;

  async function start(cap: number | null, handler?: FakeHandler, upstream?: Record<string, unknown>) {
    now = Date.parse('2025-01-31T12:00:00Z');
    gw = await startTestGateway({
      handler,
      upstream,
      clock,
      overrides: {
        keys: [
          { id: 'capped', key: CAPPED, monthlyCreditCap: cap, rateLimitPerMinute: 1000 },
          { id: 'free', key: FREE, rateLimitPerMinute: 1000 },
        ],
      },
    });
  }
  afterEach(async () => gw?.close());

  /** Wait until the settlement of `requests` requests of a key has been recorded. */
  async function settled(keyId: string, requests: number, month = utcMonth(now)) {
    for (let i = 0; i < 200; i++) {
      const usage = await gw.gateway.store.getUsage(keyId, month);
      if (usage.reduce((sum, u) => sum + u.requests, 0) >= requests) return usage;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`settlement of ${requests} requests of ${keyId} never recorded`);
  }

  it('refuses with 402 billing_error naming the spend, the cap and the reset time, before reaching the upstream', async () => {
    // Each reply costs 0.01 credits (5000 input + 1000 output tokens of haiku); the cap fits one.
    await start(0.01, () => ({ kind: 'json', body: nativeMessage('hi', { input_tokens: 5000, output_tokens: 1000 }, 'model-haiku-4.5') }));
    expect((await post(gw.url, '/v1/messages', CAPPED, {})).status).to.equal(200);
    await settled('capped', 1);
    const refused = await post(gw.url, '/v1/messages', CAPPED, {});
    expect(refused.status).to.equal(402);
    const body = (await refused.json()) as any;
    expect(body.error.type).to.equal('billing_error');
    expect(body.error.message).to.include('0.01 of 0.01 credits spent in 2025-01');
    expect(body.error.message).to.include('resets at 2025-02-01T00:00:00Z');
    expect(gw.upstream.requests).to.have.length(1);
    expect(await gw.gateway.store.getMonthSpend('capped', '2025-01')).to.equal(0.01);

    const chat = await post(gw.url, '/v1/chat/completions', CAPPED, {});
    expect(chat.status).to.equal(402);
    expect(((await chat.json()) as any).error).to.include({ code: 'insufficient_quota', type: 'insufficient_quota' });
    // other keys are not affected
    expect((await post(gw.url, '/v1/messages', FREE, {})).status).to.equal(200);
  });

  it('rolls over at 00:00 UTC on the 1st', async () => {
    await start(0.01, () => ({ kind: 'json', body: nativeMessage('hi', { input_tokens: 5000, output_tokens: 1000 }, 'model-haiku-4.5') }));
    expect((await post(gw.url, '/v1/messages', CAPPED, {})).status).to.equal(200);
    await settled('capped', 1);
    now = Date.parse('2025-01-31T23:59:59.999Z');
    expect((await post(gw.url, '/v1/messages', CAPPED, {})).status).to.equal(402);
    now = Date.parse('2025-02-01T00:00:00.000Z');
    expect((await post(gw.url, '/v1/messages', CAPPED, {})).status).to.equal(200);
    await settled('capped', 1, '2025-02');
    expect(await gw.gateway.store.getMonthSpend('capped', '2025-01')).to.equal(0.01);
    expect(await gw.gateway.store.getMonthSpend('capped', '2025-02')).to.equal(0.01);
  });

  it('leaves thinking out of a lowered request whose budget would fall under the API minimum (1024), instead of an upstream 400', async () => {
    await start(0.007);
    const reply = await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2000 } });
    expect(reply.status, await reply.clone().text()).to.equal(200);
    const sent = gw.upstream.requests[0].body;
    expect(sent.max_tokens).to.be.below(1025);
    expect(sent.thinking).to.deep.equal({ type: 'disabled' });
    expect(reply.headers.get('x-gateway-warning')).to.include('thinking left out');
  });

  it('lowers the max_tokens of a request whose worst case does not fit to what the credit left pays, and says so', async () => {
    await start(0.01);
    // 4000 output tokens of haiku = 0.02 credits: more than the whole cap
    const big = await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 4000 });
    expect(big.status).to.equal(200);
    const sent = gw.upstream.requests[0].body;
    const lowered = Number(big.headers.get('x-gateway-max-tokens'));
    expect(sent.max_tokens).to.equal(lowered);
    expect(lowered).to.be.within(16, 3999);
    expect(big.headers.get('x-gateway-warning')).to.include(`max_tokens lowered from 4000 to ${lowered}`);
    // The lowered request's worst case fits the cap, and one more token would not.
    const bodyBytes = Buffer.byteLength(JSON.stringify({ model: 'haiku', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4000 }));
    const inputBound = boundInputTokens(bodyBytes, config.reservation);
    expect(priceWorstCase(haiku, inputBound, lowered)).to.be.at.most(0.01);
    expect(priceWorstCase(haiku, inputBound, lowered + 1)).to.be.above(0.01);
    // The other fields arrive as sent.
    expect(sent.messages).to.deep.equal([{ role: 'user', content: 'hi' }]);
    // A request that fits is sent unchanged, without the header.
    await settled('capped', 1);
    const small = await post(gw.url, '/v1/messages', FREE, { max_tokens: 100 });
    expect(small.headers.get('x-gateway-max-tokens')).to.equal(null);
    expect(gw.upstream.requests[1].body.max_tokens).to.equal(100);
  });

  it('refuses with 402 only when not even a minimal reply fits: what is left, what the request needs, how to fit it', async () => {
    // haiku: a minimal reply (16 output tokens) with the input bound of this request (79 + 1024 tokens) costs 0.002286
    await start(0.002);
    const refused = await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 4000 });
    expect(refused.status).to.equal(402);
    expect(refused.headers.get('retry-after')).to.equal(null);
    const message = ((await refused.json()) as any).error.message as string;
    expect(message).to.include('0 of 0.002 credits spent in 2025-01 (UTC), 0.002 left');
    expect(message).to.match(/needs at least 0\.002286 \(its input and a minimal reply; up to 0\.022206 with its output bound\)/);
    expect(message).to.include('send a shorter request');
    expect(message).not.to.include('cap reached');
    expect(gw.upstream.requests).to.have.length(0);
  });

  it('a 402 caused by holds of requests in flight says so and carries retry-after', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await start(0.01, (request) => request.body.max_tokens === 1000
      ? { kind: 'stream', events: [{ until: released }, ...nativeTextEvents(['ok'], { input_tokens: 10, output_tokens: 5 }, 'model-haiku-4.5')] }
      : { kind: 'json', body: nativeMessage('hi', undefined, 'model-haiku-4.5') });
    const first = post(gw.url, '/v1/messages', CAPPED, { max_tokens: 1000, stream: true });
    while (gw.upstream.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // Its input alone (a 1,000-character message) does not fit beside the first request's hold, but fits the cap.
    const refused = await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(1000) }] });
    expect(refused.status).to.equal(402);
    expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
    expect(((await refused.json()) as any).error.message).to.match(/held by requests in flight.*Retry when requests in flight have finished/);
    release();
    await (await first).text();
    await settled('capped', 1);
    const retried = await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(1000) }] });
    expect(retried.status).to.equal(200);
  });

  it('does not bill count_tokens: a key at its cap can still count', async () => {
    await start(0);
    expect((await post(gw.url, '/v1/messages', CAPPED, {})).status).to.equal(402);
    const count = await post(gw.url, '/v1/messages/count_tokens', CAPPED, { max_tokens: undefined });
    expect(count.status).to.equal(200);
  });

  it('settles an upstream error to 0 and releases the hold', async () => {
    // No retries: each request settles after one upstream 500 instead of after the retries' back-off.
    await start(0.01, () => ({ kind: 'json', status: 500, body: { type: 'error', error: { type: 'api_error', message: 'boom' } } }), { maxRetries: 0 });
    for (let i = 0; i < 3; i++) expect((await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 1500 })).status).to.equal(500);
    const usage = await settled('capped', 3);
    expect(usage[0]).to.include({ requests: 3, credits: 0, inputTokens: 0, outputTokens: 0 });
  });

  it('charges a streamed reply exactly what the same reply costs unstreamed, on both routes', async () => {
    const usage = { input_tokens: 1234, output_tokens: 567, cache_creation_input_tokens: 89, cache_read_input_tokens: 1011 };
    await start(null, (request) => {
      if (!request.body.stream) return { kind: 'json', body: nativeMessage('Hello there', usage, request.body.model) };
      return {
        kind: 'stream',
        events: [
          { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } } },
          { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
          { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello there' } } },
          { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
          { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output_tokens } } },
          { event: 'message_stop', data: { type: 'message_stop' } },
        ],
      };
    });
    for (const path of ['/v1/messages', '/v1/chat/completions']) {
      for (const [secret, stream] of [[CAPPED, false], [FREE, true]] as const) {
        const res = await post(gw.url, path, secret, { stream });
        expect(res.status).to.equal(200);
        await res.text();
      }
    }
    const plain = await settled('capped', 2);
    const streamed = await settled('free', 2);
    expect(streamed).to.deep.equal(plain);
    const expected = (1234 * 1 + 567 * 5 + 89 * 1.25 + 1011 * 0.1) / 1e6;
    expect(await gw.gateway.store.getMonthSpend('free', '2025-01')).to.be.closeTo(2 * expected, 1e-9);
    expect(await gw.gateway.store.getMonthSpend('capped', '2025-01')).to.equal(await gw.gateway.store.getMonthSpend('free', '2025-01'));
  });

  it('settles a stream the client aborts to the usage seen, and frees the rest of the hold', async () => {
    await start(0.05, (request) => ({
      kind: 'stream',
      events: [
        { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 700, output_tokens: 1 } } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { pauseMs: 30_000 },
        { event: 'message_stop', data: { type: 'message_stop' } },
      ],
    }));
    const abort = new AbortController();
    const res = await post(gw.url, '/v1/messages', CAPPED, { stream: true, max_tokens: 8000 }, abort.signal);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('content_block_start')) seen += new TextDecoder().decode((await reader.read()).value);
    abort.abort();
    const usage = await settled('capped', 1);
    expect(usage[0]).to.include({ inputTokens: 700, outputTokens: 1 });
    expect(await gw.gateway.store.getMonthSpend('capped', '2025-01')).to.be.closeTo(0.000705, 1e-9);
    // the 8000-token hold (0.04 credits) is gone: another one fits in the 0.05 cap
    gw.upstream.setHandler(() => ({ kind: 'json', body: nativeMessage('ok', undefined, 'model-haiku-4.5') }));
    expect((await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 8000 })).status).to.equal(200);
  });
});

describe('credit reservation: renewal while requests are open', () => {
  // The renewer's interval timer runs on a fake clock: the test moves time on instead of waiting for it.
  let clock: FakeClock;
  beforeEach(() => {
    clock = installFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  });
  afterEach(() => clock.uninstall());

  it('renews every open hold on one timer at half the expiry, and stops with the last response', async () => {
    const renewed: string[] = [];
    const store = {
      async renewReservation(reservation: { id: string }, ttlMs: number) {
        renewed.push(`${reservation.id}:${ttlMs}`);
        return true;
      },
    } as unknown as GatewayStore;
    const renewer = createReservationRenewer(store);
    const first = new EventEmitter();
    const second = new EventEmitter();
    const third = new EventEmitter();
    const reservation = (id: string) => ({ id, keyId: 'k', month: '2026-11', credits: 1 });
    // Expiry 2 s: renewals every 1 s (the floor), for all three requests, from one timer.
    renewer.keep(first as unknown as Response, reservation('a'), 2000);
    renewer.keep(second as unknown as Response, reservation('b'), 2000);
    renewer.keep(third as unknown as Response, reservation('c'), 2000);
    await clock.tickAsync(999);
    expect(renewed, 'nothing before half the expiry').to.deep.equal([]);
    await clock.tickAsync(1);
    expect(renewed.sort()).to.deep.equal(['a:2000', 'b:2000', 'c:2000']);
    first.emit('close'); // the first of three: the last one takes its place
    await clock.tickAsync(1000);
    expect(renewed.slice(3).sort()).to.deep.equal(['b:2000', 'c:2000']);
    third.emit('close');
    second.emit('close');
    await clock.tickAsync(5000);
    expect(renewed).to.have.length(5, 'no renewal once every response closed');
    expect(clock.countTimers(), 'the timer is stopped').to.equal(0);
  });
});
