/**
 * Every usage field the upstream reports is billed at the configured price, streamed or not, on the
 * native and the chat route: input, output, cache writes (5-minute and 1-hour at their own prices),
 * cache reads and server-side web searches.
 */
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeMessage } from '../helpers/fake-upstream';
import { chatHeaders, nativeHeaders, rawRequest } from '../helpers/http-client';

/** What the fake upstream reports for every reply. */
const REPORTED = {
  input_tokens: 1000,
  output_tokens: 500,
  cache_creation_input_tokens: 3000,
  cache_read_input_tokens: 4000,
  cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
  server_tool_use: { web_search_requests: 2 },
  service_tier: 'standard',
};

/**
 * model-sonnet-4.6 in config.json: input 3, output 15, cache write 3.75 (1 hour: 6), cache read 0.3
 * credits per million tokens, 0.01 credits a web search.
 */
const EXPECTED_CREDITS = (1000 * 3 + 500 * 15 + 1000 * 3.75 + 2000 * 6 + 4000 * 0.3) / 1e6 + 2 * 0.01;

/** A streamed reply as the upstream sends it: input side in message_start, the rest in message_delta. */
function streamedEvents(model: string) {
  const { output_tokens, server_tool_use, ...inputSide } = REPORTED;
  return [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...inputSide, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'found it' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { ...inputSide, output_tokens, server_tool_use } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ];
}

describe('billing: every reported usage field at its configured price', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({
      handler: (request) => request.body.stream
        ? { kind: 'stream', events: streamedEvents(request.body.model) }
        : { kind: 'json', body: { ...nativeMessage('found it', undefined, request.body.model), usage: REPORTED } },
    });
  });
  after(async () => gw.close());

  const month = () => new Date().toISOString().slice(0, 7);
  const body = { model: 'sonnet', max_tokens: 64, messages: [{ role: 'user', content: 'search' }], tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }] };
  const requests: Array<[string, () => Promise<number>]> = [
    ['native, whole', async () => (await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body })).status],
    ['native, streamed', async () => (await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: { ...body, stream: true } })).status],
    ['chat, whole', async () => (await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: { model: 'sonnet', messages: body.messages } })).status],
    ['chat, streamed', async () => (await rawRequest(gw.url, { path: '/v1/chat/completions', headers: chatHeaders(), body: { model: 'sonnet', messages: body.messages, stream: true } })).status],
  ];

  requests.forEach(([name, send], i) => {
    it(`${name}: the ledger grows by exactly the reported usage, priced by config`, async () => {
      expect(await send()).to.equal(200);
      // The settlement runs when the response closes; wait for the request's log line.
      for (let tries = 0; tries < 100 && gw.logLines.filter((line) => line.output_tokens !== undefined).length <= i; tries++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const [totals] = await gw.gateway.store.getUsage('team-all', month());
      const n = i + 1;
      expect(totals).to.include({
        model: 'model-sonnet-4.6', requests: n, inputTokens: 1000 * n, outputTokens: 500 * n,
        cacheCreationInputTokens: 3000 * n, cacheReadInputTokens: 4000 * n,
      });
      expect(totals.credits).to.be.closeTo(EXPECTED_CREDITS * n, 1e-9);
    });
  });
});
