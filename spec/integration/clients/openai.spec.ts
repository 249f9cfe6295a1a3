/**
 * Client matrix: the `openai` package, the current major (7.x) and 6.x (the `openai-v6` alias), both
 * pinned, on the gateway's chat-completions route (`baseURL: <gateway>/v1`, the key as `apiKey`, sent
 * as `Authorization: Bearer`). The gateway translates to the native format, so the fake upstream sees
 * native requests: a `tool` message arrives as a `tool_result` block.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import OpenAIv6 from 'openai-v6';
import { lastToolResults, TEXT_PIECES, toolAnswer } from '../../helpers/agent-upstream';
import { expectLedgerEquals, trackClientTests, startClientGateway, type ClientGateway } from '../../helpers/client-matrix';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

const VERSIONS: Array<[string, string, (options: { apiKey: string; baseURL: string; maxRetries: number }) => OpenAI]> = [
  ['openai 7.x', 'openai-7', (options) => new OpenAI(options)],
  ['openai 6.x', 'openai-6', (options) => new OpenAIv6(options) as unknown as OpenAI],
];

describe('clients: openai (chat completions) through the chat route', () => {
  let c: ClientGateway;
  before(async () => {
    c = await startClientGateway(VERSIONS.map(([, keyId]) => keyId));
  });
  after(async () => c?.close());

  for (const [name, keyId, create] of VERSIONS) {
    describe(name, () => {
      let client: OpenAI;
      const billedFrom = trackClientTests(() => c);
      before(() => {
        client = create({ apiKey: c.keys[keyId], baseURL: `${c.gw.url}/v1`, maxRetries: 0 });
      });

      it('creates a chat completion', async () => {
        const completion = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'hello' }] });
        expect(completion.choices[0].message.content).to.equal(TEXT_PIECES.join(''));
        expect(completion.choices[0].finish_reason).to.equal('stop');
        expect(completion.usage?.completion_tokens).to.equal(c.agent.reported[c.agent.reported.length - 1].output_tokens);
      });

      it('streams a chat completion delta by delta, with the usage chunk', async () => {
        const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello' }] });
        const texts: string[] = [];
        let usage: OpenAI.CompletionUsage | null | undefined;
        for await (const chunk of stream) {
          const text = chunk.choices[0]?.delta?.content;
          if (text) texts.push(text);
          if (chunk.usage) usage = chunk.usage;
        }
        expect(texts).to.deep.equal(TEXT_PIECES);
        const last = c.agent.reported[c.agent.reported.length - 1];
        expect(usage).to.include({ completion_tokens: last.output_tokens, prompt_tokens: last.input_tokens + last.cache_creation_input_tokens + last.cache_read_input_tokens });
      });

      it('runs a tool round trip: a streamed tool call, then the tool message reaches the upstream as its tool_result', async () => {
        c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
        const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, tools: [WEATHER_TOOL], messages });
        const call = { id: '', name: '', arguments: '' };
        let finish: string | null = null;
        for await (const chunk of stream) {
          for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
            call.id ||= delta.id ?? '';
            call.name ||= delta.function?.name ?? '';
            call.arguments += delta.function?.arguments ?? '';
          }
          finish = chunk.choices[0]?.finish_reason ?? finish;
        }
        expect(finish).to.equal('tool_calls');
        expect(call).to.deep.equal({ id: c.agent.toolUseIds[c.agent.toolUseIds.length - 1], name: 'get_weather', arguments: '{"city":"Paris"}' });

        messages.push({ role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }] });
        messages.push({ role: 'tool', tool_call_id: call.id, content: '18 C and sunny' });
        const answer = await client.chat.completions.create({ model: 'sonnet', tools: [WEATHER_TOOL], messages });
        expect(answer.choices[0].message.content).to.equal(toolAnswer('get_weather', '18 C and sunny'));
        const [result] = lastToolResults(c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body);
        expect(result).to.deep.include({ type: 'tool_result', tool_use_id: call.id });
      });

      it('reasoning_effort on opus reaches the upstream as adaptive thinking with the effort; the sampling fields opus refuses are dropped and named', async () => {
        const { response } = await client.chat.completions.create({
          model: 'opus', reasoning_effort: 'high', temperature: 0.4, top_p: 0.9, messages: [{ role: 'user', content: 'hello' }],
        }).withResponse();
        expect(response.status).to.equal(200);
        expect(response.headers.get('x-gateway-dropped-params')).to.equal('temperature, top_p');
        const sent = c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body;
        expect(sent).to.deep.include({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' }, max_tokens: 128000 });
        expect(sent).not.to.have.any.keys('temperature', 'top_p');
      });

      it('two requests with the same long system prompt: the second reads the prompt cache, billed at the cache-read price', async () => {
        const system = `You are a careful assistant. ${'Follow the house rules for every answer. '.repeat(400)}`;
        const ask = (content: string) => client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'system', content: system }, { role: 'user', content }] });
        const creditsOf = async () => (await c.gw.gateway.store.getUsage(keyId, new Date().toISOString().slice(0, 7))).reduce((sum, row) => sum + row.credits, 0);
        await ask('first question');
        const before = await creditsOf();
        const second = await ask('second question');
        const reply = c.agent.reported[c.agent.reported.length - 1];
        expect(reply.cache_read_input_tokens, 'the system prompt read from the cache').to.be.greaterThan(3000);
        expect(second.usage?.prompt_tokens_details?.cached_tokens).to.equal(reply.cache_read_input_tokens);
        const pricing = c.gw.config.models.find((m) => m.id === 'model-sonnet-4.6')!.pricing;
        const expected = (reply.input_tokens * pricing.inputPerMillion + reply.output_tokens * pricing.outputPerMillion
          + reply.cache_creation_input_tokens * pricing.cacheWritePerMillion! + reply.cache_read_input_tokens * pricing.cacheReadPerMillion!) / 1_000_000;
        let after = await creditsOf();
        for (let i = 0; i < 100 && Math.abs(after - before - expected) > 1e-9; i++) after = await new Promise((r) => setTimeout(r, 50)).then(creditsOf);
        expect(after - before).to.be.closeTo(expected, 1e-9);
      });

      describe('a tool loop with thinking on opus (the upstream requires the signed thinking block before the tool_use)', () => {
        const firstLeg = async () => {
          c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
          const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
          const first = await client.chat.completions.create({ model: 'opus', reasoning_effort: 'high', tools: [WEATHER_TOOL], messages });
          const message = first.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string; thinking_blocks?: Array<{ type: string; signature?: string }> };
          return { messages, message };
        };
        const secondLeg = (messages: OpenAI.ChatCompletionMessageParam[]) => client.chat.completions.create({ model: 'opus', reasoning_effort: 'high', tools: [WEATHER_TOOL], messages }).withResponse();
        const sentAssistantTurn = () => {
          const body = c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body;
          return body.messages[body.messages.length - 2];
        };

        it('the reply carries reasoning_content and the signed thinking_blocks; the message echoed back carries them upstream', async () => {
          const { messages, message } = await firstLeg();
          expect(message.reasoning_content).to.be.a('string').and.not.equal('');
          expect(message.thinking_blocks).to.have.length(1);
          const [block] = message.thinking_blocks!;
          messages.push(message as OpenAI.ChatCompletionMessageParam, { role: 'tool', tool_call_id: message.tool_calls![0].id, content: '18 C and sunny' });
          const { data, response } = await secondLeg(messages);
          expect(response.status).to.equal(200);
          expect(data.choices[0].message.content).to.equal(toolAnswer('get_weather', '18 C and sunny'));
          expect(sentAssistantTurn().content[0]).to.deep.equal(block);
        });

        it('a rebuilt assistant message (content and tool_calls only) still succeeds: the gateway restores the signed block it saw', async () => {
          const { messages, message } = await firstLeg();
          messages.push({ role: 'assistant', content: message.content, tool_calls: message.tool_calls }, { role: 'tool', tool_call_id: message.tool_calls![0].id, content: '18 C and sunny' });
          const { response } = await secondLeg(messages);
          expect(response.status).to.equal(200);
          expect(response.headers.get('x-gateway-warning') ?? '').not.to.contain('thinking left out');
          expect(sentAssistantTurn().content[0]).to.deep.equal(message.thinking_blocks![0]);
        });

        it('a tool call the gateway holds no thinking for goes on without thinking for that turn, never a 400', async () => {
          c.agent.setScript({});
          const { data, response } = await secondLeg([
            { role: 'user', content: 'Weather in Paris?' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_unknown_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
            { role: 'tool', tool_call_id: 'toolu_unknown_01', content: '18 C and sunny' },
          ]);
          expect(response.status).to.equal(200);
          expect(data.choices[0].message.content).to.equal(toolAnswer('get_weather', '18 C and sunny'));
          expect(response.headers.get('x-gateway-warning')).to.contain('thinking left out for this turn');
          expect(c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body).not.to.have.property('thinking');
        });

        for (const [mode, model, thinking] of [
          ['budget only', 'haiku', { type: 'enabled', budget_tokens: 16384 }],
          ['thinking by default', 'model-opus-5', { type: 'adaptive' }],
          ['always thinking', 'model-fable-5', { type: 'adaptive' }],
        ] as const) {
          it(`on ${model} (${mode}) too, with the assistant message rebuilt`, async () => {
            c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
            const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
            const first = await client.chat.completions.create({ model, reasoning_effort: 'high', tools: [WEATHER_TOOL], messages });
            expect(c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body.thinking).to.deep.equal(thinking);
            const { message } = first.choices[0];
            messages.push({ role: 'assistant', content: message.content, tool_calls: message.tool_calls }, { role: 'tool', tool_call_id: message.tool_calls![0].id, content: '18 C and sunny' });
            const answer = await client.chat.completions.create({ model, reasoning_effort: 'high', tools: [WEATHER_TOOL], messages });
            expect(answer.choices[0].message.content).to.equal(toolAnswer('get_weather', '18 C and sunny'));
            expect(sentAssistantTurn().content[0]).to.include({ type: 'thinking' });
          });
        }

        it('streams the thinking as reasoning_content deltas and the signed block whole', async () => {
          const stream = await client.chat.completions.create({ model: 'opus', reasoning_effort: 'low', stream: true, messages: [{ role: 'user', content: 'hello' }] });
          const reasoning: string[] = [];
          const blocks: unknown[] = [];
          for await (const chunk of stream) {
            const delta = chunk.choices[0]?.delta as { reasoning_content?: string; thinking_blocks?: unknown[] } | undefined;
            if (delta?.reasoning_content) reasoning.push(delta.reasoning_content);
            if (delta?.thinking_blocks) blocks.push(...delta.thinking_blocks);
          }
          expect(reasoning.join('')).to.match(/^Thinking about turn \d+\.$/);
          expect(blocks).to.have.length(1);
          expect(blocks[0]).to.include({ type: 'thinking', thinking: reasoning.join('') }).and.to.have.property('signature').that.matches(/^sig_fake_/);
        });
      });

      it("bills the key exactly the usage the upstream reported", async () => {
        await expectLedgerEquals(c.gw, keyId, c.agent.reported.slice(billedFrom.index));
      });
    });
  }
});
