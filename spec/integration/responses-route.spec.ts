/**
 * POST /v1/responses as a route: bad input refused with a 400 naming the field (nothing upstream),
 * upstream errors in the OpenAI shape, dropped tool types named in the log line, the credit
 * reservation reading max_output_tokens, client aborts billed, and key groups whose upstream speaks
 * chat-completions refused.
 */
import http from 'node:http';
import { expect } from 'chai';
import { MemoryStore } from '../../lib/store/memory-store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, isChatError, parseSseText, rawRequest } from '../helpers/http-client';
import { startLibraryGateway, TEST_KEYS, type LibraryGateway } from '../helpers/library';
import { requestLines, roundTripHandler, waitForRequestLines, billedTokens } from '../helpers/responses-upstream';

const post = (gw: TestGateway, body: object, headers = chatHeaders()) => rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers, body });

describe('Responses route', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ handler: roundTripHandler() });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
    gw.upstream.setHandler(roundTripHandler());
  });

  describe('bad input: 400 in the OpenAI shape naming the field, nothing upstream', () => {
    const cases: Array<{ title: string; body: object; param: string }> = [
      { title: 'input of a wrong type', body: { model: 'sonnet', input: 42 }, param: 'input' },
      { title: 'an item type the gateway cannot read', body: { model: 'sonnet', input: [{ type: 'computer_call_output', call_id: 'x' }] }, param: 'input[0].type' },
      { title: 'an item that is neither typed nor a message', body: { model: 'sonnet', input: [{ content: 'hi' }] }, param: 'input[0].type' },
      { title: 'an unsupported content part', body: { model: 'sonnet', input: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, param: 'input[0].content[0].type' },
      { title: 'a function call with unreadable arguments', body: { model: 'sonnet', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{oops' }] }, param: 'input[0].arguments' },
      { title: 'max_output_tokens below 1', body: { model: 'sonnet', input: 'hi', max_output_tokens: 0 }, param: 'max_output_tokens' },
      { title: 'no model', body: { input: 'hi' }, param: 'model' },
      { title: 'a tool_choice naming no tool', body: { model: 'sonnet', input: 'hi', tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } }, param: 'tool_choice.name' },
    ];
    for (const { title, body, param } of cases) {
      it(title, async () => {
        const reply = await post(gw, body);
        expect(reply.status, reply.text).to.equal(400);
        expect(isChatError(reply.json)).to.equal(true);
        expect(reply.json.error.param).to.equal(param);
        expect(reply.json.error.message).to.contain(param.replace(/\[.*$/, ''));
        expect(gw.upstream.requests).to.have.length(0);
      });
    }

    it('a body that is not JSON', async () => {
      const reply = await rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers: chatHeaders(), body: '{"model": "sonnet", input' });
      expect(reply.status).to.equal(400);
      expect(isChatError(reply.json)).to.equal(true);
      expect(gw.upstream.requests).to.have.length(0);
    });

    it('a key may not use the model: 403, nothing upstream', async () => {
      const reply = await post(gw, { model: 'sonnet', input: 'hi' }, chatHeaders(KEYS.haikuOnly));
      expect(reply.status).to.equal(403);
      expect(reply.json.error.code).to.equal('model_not_allowed');
      expect(gw.upstream.requests).to.have.length(0);
    });
  });

  it('an upstream error before the first byte keeps its status, in the OpenAI error shape, streamed or not', async () => {
    // A 400 (a 429 would be retried first).
    gw.upstream.setHandler(() => ({ kind: 'json', status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } } }));
    for (const stream of [false, true]) {
      const reply = await post(gw, { model: 'sonnet', input: 'hi', stream });
      expect(reply.status).to.equal(400);
      expect(reply.json.error).to.include({ type: 'invalid_request_error', code: 'context_length_exceeded' });
      expect(reply.json.error.message).to.contain('prompt is too long');
    }
    gw.upstream.setHandler(() => ({ kind: 'stream', events: [{ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] }));
    const reply = await post(gw, { model: 'sonnet', input: 'hi', stream: true });
    expect(reply.status).to.equal(503);
    expect(reply.json.error.message).to.equal('Overloaded');
  });

  it('streams event: lines with increasing sequence numbers, ending with response.completed', async () => {
    const reply = await post(gw, { model: 'sonnet', input: 'hi', stream: true });
    expect(reply.headers['content-type']).to.match(/^text\/event-stream/);
    const events = parseSseText(reply.text);
    expect(events.every((event) => event.event === JSON.parse(event.data).type)).to.equal(true);
    const numbers = events.map((event) => JSON.parse(event.data).sequence_number);
    expect(numbers).to.deep.equal(numbers.map((_, i) => i));
    expect(events[events.length - 1].event).to.equal('response.completed');
  });

  it('tool types with no native counterpart are left out, never refused, and named in the log line; local_shell is mapped', async () => {
    const before = requestLines(gw).length;
    const reply = await post(gw, {
      model: 'sonnet', input: 'hi', store: false,
      tools: [{ type: 'function', name: 'shell', parameters: { type: 'object', properties: {} } }, { type: 'local_shell' }, { type: 'image_generation' }, { type: 'web_search' }],
    });
    expect(reply.status).to.equal(200);
    // local_shell has a native stand-in (Codex's shell); image_generation has none.
    expect(gw.upstream.requests[0].body.tools.map((tool: { name: string }) => tool.name)).to.deep.equal(['shell', 'local_shell', 'web_search']);
    expect(gw.upstream.requests[0].body.tools[2]).to.deep.include({ type: 'web_search_20250305', name: 'web_search' });
    const lines = await waitForRequestLines(gw, before + 1);
    expect(lines[lines.length - 1].dropped_tools).to.deep.equal(['image_generation']);
  });

  it('the credit reservation reads max_output_tokens: one the cap cannot pay is cut to the credit left, and the reply says so', async () => {
    const capped = await startTestGateway({
      overrides: { keys: [{ id: 'capped', key: 'sk-cs4-test-capped-key-0009', monthlyCreditCap: 0.5, rateLimitPerMinute: 1000 }] },
    });
    try {
      // sonnet output costs 15 credits per million tokens: 200000 output tokens cost more than the cap.
      const cut = await post(capped, { model: 'sonnet', input: 'hi', max_output_tokens: 200000 }, chatHeaders('sk-cs4-test-capped-key-0009'));
      expect(cut.status).to.equal(200);
      const lowered = Number(cut.headers['x-gateway-max-tokens']);
      expect(lowered).to.be.within(30000, 33333);
      expect(cut.headers['x-gateway-warning']).to.include(`max_output_tokens lowered from 200000 to ${lowered}`);
      expect(capped.upstream.requests[0].body.max_tokens).to.equal(lowered);
      const served = await post(capped, { model: 'sonnet', input: 'hi', max_output_tokens: 100 }, chatHeaders('sk-cs4-test-capped-key-0009'));
      expect(served.status).to.equal(200);
      expect(served.headers['x-gateway-max-tokens']).to.equal(undefined);
      expect(capped.upstream.requests[1].body.max_tokens).to.equal(100);
    } finally {
      await capped.close();
    }
  });

  it('a store that cannot keep the response does not cost the client its reply: it is logged instead', async () => {
    const store = new MemoryStore();
    store.saveResponse = async () => {
      throw new Error('disk full');
    };
    const own = await startTestGateway({ handler: roundTripHandler(), store });
    try {
      const whole = await post(own, { model: 'sonnet', input: 'hi' });
      expect(whole.status).to.equal(200);
      expect(whole.json.output[0].content[0].text).to.equal('It is 18°C in Paris.');
      const streamed = await post(own, { model: 'sonnet', input: 'hi', stream: true });
      expect(parseSseText(streamed.text).at(-1)?.event).to.equal('response.completed');
      const warnings = own.logLines.filter((line) => line.message === 'response not stored: the store failed');
      expect(warnings.map((line) => line.error)).to.deep.equal(['disk full', 'disk full']);
      const lookup = await post(own, { model: 'sonnet', input: 'more', previous_response_id: whole.json.id });
      expect(lookup.status).to.equal(404);
      expect(lookup.json.error.param).to.equal('previous_response_id');
    } finally {
      await own.close();
    }
  });

  it('a client that goes away mid-stream closes the upstream, and what was streamed is billed', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Its own gateway, so the upstream request is the first (socketClosed counts from it).
    const own = await startTestGateway({
      handler: () => ({
        kind: 'stream',
        events: [
          { event: 'message_start', data: { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'model-sonnet-4.6', content: [], stop_reason: null, usage: { input_tokens: 21, output_tokens: 1 } } } },
          { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
          { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'thirty-one characters of answer' } } },
          { until: held },
          { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'never sent' } } },
        ],
      }),
    });
    try {
      const target = new URL('/v1/responses', own.url);
      await new Promise<void>((resolve, reject) => {
        const req = http.request({ hostname: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: Object.fromEntries(chatHeaders()) });
        req.once('error', () => undefined);
        req.once('response', (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => {
            text += chunk.toString();
            if (text.includes('response.output_text.delta')) {
              req.destroy();
              resolve();
            }
          });
          res.once('error', () => undefined);
        });
        req.end(JSON.stringify({ model: 'sonnet', input: 'hi', stream: true }));
        setTimeout(() => reject(new Error('no delta arrived')), 5000).unref();
      });
      await own.upstream.socketClosed(0);
      const lines = await waitForRequestLines(own, 1);
      expect(lines[0].aborted).to.equal(true);
      // 31 characters streamed: at least ceil(31 / 4) = 8 output tokens.
      expect(await billedTokens(own, 'team-all')).to.deep.equal({ input: 21, output: 8, requests: 1 });
    } finally {
      release();
      await own.close();
    }
  });
});

describe('Responses route for a key group whose upstream speaks chat-completions', () => {
  let native: FakeUpstream;
  let chat: FakeUpstream;
  let gw: LibraryGateway;
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const shipped = require('../../../config.json');
  const FAMILY_KEY = 'sk-fam-test-family-key-0001';

  before(async () => {
    process.env.TEST_FAMILY_API_KEY = 'family-upstream-secret';
    native = await startFakeUpstream();
    chat = await startFakeUpstream();
    gw = await startLibraryGateway(native.url, {
      config: {
        models: [...shipped.models, { id: 'fam-5', upstreamModel: 'fam-large-2026', pricing: { inputPerMillion: 2, outputPerMillion: 8 } }],
        keyGroups: [{ id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', url: chat.url, apiKeyEnv: 'TEST_FAMILY_API_KEY' } }],
        keys: [...TEST_KEYS, { id: 'family-team', key: FAMILY_KEY, rateLimitPerMinute: 100000 }],
      },
    });
  });
  after(async () => {
    await gw.close();
    await native.close();
    await chat.close();
  });

  it('is refused with a 400 that says which route to use; nothing reaches either upstream', async () => {
    const reply = await rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers: chatHeaders(FAMILY_KEY), body: { model: 'fam-5', input: 'hi' } });
    expect(reply.status).to.equal(400);
    expect(reply.json.error.message).to.contain('POST /v1/chat/completions');
    expect(chat.requests).to.have.length(0);
    expect(native.requests.filter((r) => r.method !== 'HEAD')).to.have.length(0);
  });
});
