/**
 * The credit hold covers what the upstream can bill, not only the body the client sent (issue 40,
 * High 1, High 2, Medium 8 and the re-serialised body): the signed thinking the gateway puts back into
 * a tool loop's turn (chat and Responses, the openai SDK), a file named by id and web search results
 * (native, the Anthropic SDK), the image parts of a batch, and a native body that grows when sent
 * serialised again. The fake upstream bills what it receives as the real one would: a token per byte
 * sent, a text file at its size, each web search's results as input. On both stores, parallel requests
 * of a capped key never pass its cap.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { utcMonth } from '../../lib/store/month';
import { MEASURE_TIMEOUT_MS } from '../../middleware/measured-input';
import { createFakeFiles, type FakeFiles } from '../helpers/fake-files';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

/** Keys, one per attack, each with its cap (credits). */
const CAPS = { chat: 0.5, responses: 0.5, files: 0.5, search: 1, batch: 0.3, utf8: 0.5, measure: 0.1 } as const;
type Attack = keyof typeof CAPS;
const secretOf = (attack: Attack) => `sk-cs4-test-hold-added-${attack}-0040`;
/** 100 KB of thinking the first turn of a tool loop produces, kept by the gateway for its tool call. */
const THINKING = 't'.repeat(100_000);
/** Input tokens one web search's results add (within haiku's 200,000-token context window). */
const SEARCH_RESULT_TOKENS = 150_000;

/**
 * A fake upstream that bills like the real one: input = bytes received (a token a byte) + the size of
 * each text file named + the results of each web search (`max_uses` of them). A request that starts
 * a tool loop ("call the tool") gets a reply with thinking and a tool call.
 */
function billingHandler(files: () => FakeFiles): FakeHandler {
  return (request) => {
    const body = request.body;
    // An agent's text runs about 4 bytes a token: count_tokens and the bill agree on it.
    const agentTokens = Math.ceil(Buffer.byteLength(JSON.stringify(body?.messages ?? [])) / 4);
    const text = request.raw.toString('utf8');
    let input = String(body?.messages?.[0]?.content).startsWith('agent:') ? agentTokens : request.raw.length;
    for (const [, id] of text.matchAll(/"file_id":"([^"]+)"/g)) input += files().sizeOf(id) ?? 0;
    // count_tokens counts what the request holds (files included), not what server tools will add.
    if (request.url.startsWith('/v1/messages/count_tokens')) {
      return String(body?.messages?.[0]?.content).startsWith('agent: stall') ? { kind: 'hang' } : { kind: 'json', body: { input_tokens: input } };
    }
    const search = Array.isArray(body?.tools) ? body.tools.find((tool: any) => String(tool?.type).startsWith('web_search')) : undefined;
    const searches = search ? Number(search.max_uses ?? 5) : 0;
    input += searches * SEARCH_RESULT_TOKENS;
    const usage = { input_tokens: input, output_tokens: 5, server_tool_use: { web_search_requests: searches } };
    const last = body?.messages?.at(-1)?.content;
    const startsLoop = typeof last === 'string' ? last === 'call the tool' : last?.[0]?.text === 'call the tool';
    if (startsLoop) {
      return {
        kind: 'json', body: {
          ...nativeMessage('', usage, body.model), stop_reason: 'tool_use',
          content: [{ type: 'thinking', thinking: THINKING, signature: 'sig-1' }, { type: 'tool_use', id: 'toolu_hold_1', name: 'lookup', input: {} }],
        },
      };
    }
    return { kind: 'json', body: nativeMessage('done', usage, body?.model) };
  };
}

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`the credit hold covers what the upstream bills (${storeKind} store)`, function () {
    this.timeout(60_000);
    let gw: TestGateway;
    let files: FakeFiles;
    const prefix = uniqueRedisPrefix('hold-added');
    before(async () => {
      files = createFakeFiles(billingHandler(() => files));
      gw = await startTestGateway({
        store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined,
        handler: files.handler,
        overrides: {
          keys: [
            { id: 'team-all', key: KEYS.all, rateLimitPerMinute: 100000 },
            ...Object.entries(CAPS).map(([attack, cap]) => ({ id: `cap-${attack}`, key: secretOf(attack as Attack), monthlyCreditCap: cap, rateLimitPerMinute: 100000 })),
          ],
        },
      });
    });
    after(async () => {
      await gw.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    /** The key's spend once every reply has settled: never past its cap, and something was served. */
    async function expectWithinCap(attack: Attack): Promise<number> {
      const store = gw.gateway.store;
      const month = utcMonth(Date.now());
      let spent = -1;
      // Settlement runs as each reply closes: read until two reads agree (bounded).
      for (let i = 0; i < 50; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const now = await store.getMonthSpend(`cap-${attack}`, month);
        if (now === spent) break;
        spent = now;
      }
      expect(spent, `spent by cap-${attack}`).to.be.above(0).and.at.most(CAPS[attack]);
      return spent;
    }
    const openai = (attack: Attack) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: secretOf(attack), maxRetries: 0 });
    const anthropic = (attack: Attack) => new Anthropic({ baseURL: gw.url, apiKey: secretOf(attack), maxRetries: 0 });
    const tool = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: {} } } };

    it('chat: the kept thinking a tool loop\'s turn gets back is held; 25 parallel turns stay within the cap', async () => {
      const client = openai('chat');
      const first = await client.chat.completions.create({
        model: 'haiku', reasoning_effort: 'low', max_completion_tokens: 4000, tools: [tool], messages: [{ role: 'user', content: 'call the tool' }],
      });
      const call = first.choices[0].message.tool_calls![0];
      const turn = () => client.chat.completions.create({
        model: 'haiku', reasoning_effort: 'low', max_completion_tokens: 4000, tools: [tool],
        messages: [
          { role: 'user', content: 'call the tool' },
          // Rebuilt from content and tool_calls, as most agents do: the thinking_blocks are dropped.
          { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'lookup', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: call.id, content: 'ok' },
        ],
      }).then(() => 200, (err) => err.status as number);
      const sentBefore = gw.upstream.requests.length;
      const statuses = await Promise.all(Array.from({ length: 25 }, turn));
      expect(statuses.filter((s) => s !== 200 && s !== 402), String(statuses)).to.deep.equal([]);
      const sent = gw.upstream.requests.slice(sentBefore);
      expect(sent.length).to.equal(statuses.filter((s) => s === 200).length).and.be.above(0);
      for (const request of sent) expect(request.body.messages[1].content[0]).to.include({ type: 'thinking', thinking: THINKING });
      await expectWithinCap('chat');
    });

    it('Responses: the kept thinking a tool loop\'s turn gets back is held; 25 parallel turns stay within the cap', async () => {
      const client = openai('responses');
      const first = await client.responses.create({
        model: 'haiku', reasoning: { effort: 'low' }, max_output_tokens: 4000, store: false,
        tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false }], input: 'call the tool',
      });
      const call = first.output.find((item) => item.type === 'function_call') as { call_id: string };
      const turn = () => client.responses.create({
        model: 'haiku', reasoning: { effort: 'low' }, max_output_tokens: 4000, store: false,
        tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} }, strict: false }],
        // The reasoning item is sent back without encrypted_content (or not at all), as the Agents SDK does.
        input: [
          { role: 'user', content: 'call the tool' },
          { type: 'function_call', call_id: call.call_id, name: 'lookup', arguments: '{}' },
          { type: 'function_call_output', call_id: call.call_id, output: 'ok' },
        ],
      }).then(() => 200, (err) => err.status as number);
      const sentBefore = gw.upstream.requests.length;
      const statuses = await Promise.all(Array.from({ length: 25 }, turn));
      expect(statuses.filter((s) => s !== 200 && s !== 402), String(statuses)).to.deep.equal([]);
      const sent = gw.upstream.requests.slice(sentBefore);
      expect(sent.length).to.equal(statuses.filter((s) => s === 200).length).and.be.above(0);
      for (const request of sent) expect(request.body.messages[1].content[0]).to.include({ type: 'thinking', thinking: THINKING });
      await expectWithinCap('responses');
    });

    it('native: a file named by id is held at its stored size; 10 parallel requests stay within the cap, a 402 names the file', async () => {
      const client = anthropic('files');
      const uploaded = await client.beta.files.upload({ file: await toFile(Buffer.alloc(150_000, 'f'), 'big.txt', { type: 'text/plain' }) });
      const ask = () => client.beta.messages.create({
        model: 'haiku', max_tokens: 16, betas: ['files-api-2025-04-14'],
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: uploaded.id } }, { type: 'text', text: 'Summarise.' }] }],
      }).then(() => 'ok', (err) => err as InstanceType<typeof Anthropic.APIError>);
      const replies = await Promise.all(Array.from({ length: 10 }, ask));
      const refused = replies.filter((reply) => reply !== 'ok') as Array<InstanceType<typeof Anthropic.APIError>>;
      expect(refused.map((err) => err.status)).to.deep.equal(Array(refused.length).fill(402));
      expect(refused.length).to.be.above(0);
      expect(refused[0].message).to.include(`from file(s) ${uploaded.id}`).and.include('150,000');
      await expectWithinCap('files');
    });

    it('native: web search results are held at the context window per use; 10 parallel requests stay within the cap', async () => {
      const client = anthropic('search');
      const ask = () => client.messages.create({
        model: 'haiku', max_tokens: 16, tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }],
        messages: [{ role: 'user', content: 'search the news' }],
      }).then(() => 'ok', (err) => err as InstanceType<typeof Anthropic.APIError>);
      const replies = await Promise.all(Array.from({ length: 10 }, ask));
      const refused = replies.filter((reply) => reply !== 'ok') as Array<InstanceType<typeof Anthropic.APIError>>;
      expect(refused.map((err) => err.status)).to.deep.equal(Array(refused.length).fill(402));
      expect(refused.length).to.be.above(0);
      expect(refused[0].message).to.include('for web_search results (2 use(s) x the 200,000-token context window)');
      await expectWithinCap('search');
    });

    it('batches: the image parts of each request are held (a batch of 5 x 40 images is refused on a cap of 0.3, naming them)', async () => {
      const image = { type: 'image' as const, source: { type: 'url' as const, url: 'https://example.com/photo.png' } };
      const before = gw.upstream.requests.length;
      const refused = await anthropic('batch').messages.batches.create({
        requests: Array.from({ length: 5 }, (_, i) => ({
          custom_id: `r${i}`, params: { model: 'haiku', max_tokens: 16, messages: [{ role: 'user' as const, content: [...Array(40).fill(image), { type: 'text' as const, text: 'describe' }] }] },
        })),
      }).catch((err) => err);
      expect(refused).to.be.instanceOf(Anthropic.APIError);
      expect(refused.status).to.equal(402);
      expect(refused.message).to.include('64,000 for 40 image(s) at 1600 each');
      expect(gw.upstream.requests.length, 'no batch created upstream').to.equal(before);
    });

    it('native: a request the byte bound refuses near the cap is measured with count_tokens and held at that figure', async () => {
      const client = anthropic('measure');
      const before = gw.upstream.requests.length;
      // 120 KB: about 0.24 credits by its bytes, past the 0.1 cap; about 30,000 tokens measured.
      const reply = await client.messages.create({ model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: `agent: ${'word '.repeat(24_000)}` }] });
      expect(reply.content[0]).to.include({ type: 'text' });
      const paths = gw.upstream.requests.slice(before).map((request) => request.url);
      expect(paths).to.deep.equal(['/v1/messages/count_tokens', '/v1/messages']);
      // An ordinary request fits its byte bound: no count_tokens call.
      await client.messages.create({ model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: 'agent: hi' }] });
      expect(gw.upstream.requests.at(-1)!.url).to.equal('/v1/messages');
      expect(gw.upstream.requests.length).to.equal(before + 3);
      await expectWithinCap('measure');
      // A count_tokens that does not answer leaves the byte bound's 402, within MEASURE_TIMEOUT_MS.
      const started = Date.now();
      const stalled = await client.messages.create({ model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: `agent: stall ${'word '.repeat(24_000)}` }] })
        .catch((err) => err);
      expect(stalled).to.be.instanceOf(Anthropic.APIError);
      expect(stalled.status).to.equal(402);
      expect(Date.now() - started).to.be.below(MEASURE_TIMEOUT_MS + 1500);
    });

    it('native: a body that is not valid UTF-8, sent serialised again for its alias, is held at the size sent', async () => {
      // 50,000 bytes 0xFF: each goes upstream as U+FFFD, three bytes.
      const head = Buffer.from('{"model":"haiku","max_tokens":16,"messages":[{"role":"user","content":"');
      const body = Buffer.concat([head, Buffer.alloc(50_000, 0xff), Buffer.from('"}]}')]);
      const replies = await Promise.all(Array.from({ length: 6 }, () => rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(secretOf('utf8')), body })));
      expect(replies.map((reply) => reply.status).filter((s) => s !== 200 && s !== 402)).to.deep.equal([]);
      expect(replies.filter((reply) => reply.status === 200).length).to.be.above(0);
      expect(gw.upstream.requests.at(-1)!.raw.length, 'sent larger than received').to.be.above(140_000);
      await expectWithinCap('utf8');
    });
  });
}
