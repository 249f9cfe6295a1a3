import { install as installFakeTimers, type Clock as FakeClock } from '@sinonjs/fake-timers';
import { expect } from 'chai';
import { createCatalogue } from '../../lib/catalogue';
import { parseConfig } from '../../lib/config';
import { utcMonth } from '../../lib/store/month';
import type { Request, Response } from 'express';
import type { GatewayStore } from '../../lib/store/types';
import { EventEmitter } from 'node:events';
import { boundInputTokens, boundWebSearches, createReservationRenewer, createCreditReservation, maxOutputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
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
    expect(boundInputTokens(1000, { bytesPerInputToken: 1, overheadInputTokens: 1024, webSearchesPerRequest: 10 })).to.equal(2024);
    expect(boundInputTokens(1001, { bytesPerInputToken: 2, overheadInputTokens: 0, webSearchesPerRequest: 10 })).to.equal(501);
  });

  it('prices input at the model\'s highest input price (a 1-hour cache write costs more than plain input)', () => {
    // haiku: input 1, cache write 1.25 (1 hour: 2), cache read 0.1, output 5 credits per million tokens, 0.01 a web search
    expect(priceWorstCase(haiku, 1_000_000, 0)).to.equal(2);
    expect(priceWorstCase(haiku, 0, 1_000_000)).to.equal(5);
    expect(priceWorstCase(haiku, 0, 0, 5)).to.equal(0.05);
  });

  it('holds web searches for each web search tool offered: its max_uses, else the configured default', () => {
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10 };
    expect(boundWebSearches({ tools: [{ name: 'Bash', input_schema: {} }] }, reservation)).to.equal(0);
    expect(boundWebSearches({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }] }, reservation)).to.equal(3);
    expect(boundWebSearches({ tools: [{ type: 'web_search_20260101', name: 'web_search' }, null, 'x'] }, reservation)).to.equal(10);
    expect(boundWebSearches({ tools: 'not an array' }, reservation)).to.equal(0);
    expect(boundWebSearches(null, reservation)).to.equal(0);
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
    const reservation = { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10 };
    const step = createCreditReservation({ store, catalogue, format: 'native', reservation, reservationTtlMs: 1000 });
    const body = { model: 'haiku', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
    const run = (bodyBytes: number | undefined) => new Promise<void>((resolve, reject) => {
      const ctx = { key: { id: 'k', monthlyCreditCap: null }, model: haiku, bodyBytes };
      const res = { locals: { gateway: ctx }, once: (_event: string, close: () => void) => setImmediate(close) };
      step({ body } as Request, res as unknown as Response, (err?: unknown) => (err ? reject(err) : resolve()));
    });
    await run(5000); // e.g. a pretty-printed body: its bytes on the wire are what the bound counts
    await run(undefined);
    expect(reserved).to.deep.equal([
      priceWorstCase(haiku, 5000, 1),
      priceWorstCase(haiku, Buffer.byteLength(JSON.stringify(body)), 1),
    ]);
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
    const step = createCreditReservation({ store, catalogue, format: 'native', reservation: { bytesPerInputToken: 1, overheadInputTokens: 0, webSearchesPerRequest: 10 }, reservationTtlMs: 1000 });
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

  it('refuses a request whose max_tokens alone could pass the cap, and lets a smaller one through', async () => {
    await start(0.01);
    // 4000 output tokens of haiku = 0.02 credits: more than the whole cap
    const big = await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 4000 });
    expect(big.status).to.equal(402);
    expect(((await big.json()) as any).error.message).to.match(/may cost up to 0\.02\d*/);
    expect((await post(gw.url, '/v1/messages', CAPPED, { max_tokens: 100 })).status).to.equal(200);
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
