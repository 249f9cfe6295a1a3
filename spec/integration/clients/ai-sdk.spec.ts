/**
 * Client matrix: the Vercel AI SDK (`ai` with `@ai-sdk/anthropic` on the native route and
 * `@ai-sdk/openai`'s `.chat(...)` model on the chat-completions route), all pinned. They are ESM-only,
 * loaded with a real `import()`. Their `engines` say node >= 22; these tests are what shows the
 * pinned versions work on the Node 20 this project supports.
 *
 * Settings: `createAnthropic({ baseURL: '<gateway>/v1', apiKey })` (sends `x-api-key`, no betas for a
 * plain request); `createOpenAI({ baseURL: '<gateway>/v1', apiKey }).chat('<model>')` (Bearer).
 */
import { expect } from 'chai';
import { lastToolResults, TEXT_PIECES, toolAnswer } from '../../helpers/agent-upstream';
import { expectLedgerEquals, trackClientTests, importEsm, startClientGateway, type ClientGateway } from '../../helpers/client-matrix';

type Ai = typeof import('ai');
type AiAnthropic = typeof import('@ai-sdk/anthropic');
type AiOpenAi = typeof import('@ai-sdk/openai');

describe('clients: Vercel AI SDK (ai) through both routes', () => {
  let c: ClientGateway;
  let ai: Ai;
  let providers: Record<string, () => any>;
  let openai: AiOpenAi;
  before(async () => {
    let anthropic: AiAnthropic;
    [c, ai, anthropic, openai] = await Promise.all([
      startClientGateway(['ai-sdk-anthropic', 'ai-sdk-openai']),
      importEsm<Ai>('ai'),
      importEsm<AiAnthropic>('@ai-sdk/anthropic'),
      importEsm<AiOpenAi>('@ai-sdk/openai'),
    ]);
    providers = {
      'ai-sdk-anthropic': () => anthropic.createAnthropic({ baseURL: `${c.gw.url}/v1`, apiKey: c.keys['ai-sdk-anthropic'] })('model-sonnet-4.6'),
      'ai-sdk-openai': () => openai.createOpenAI({ baseURL: `${c.gw.url}/v1`, apiKey: c.keys['ai-sdk-openai'] }).chat('sonnet'),
    };
  });
  after(async () => c?.close());

  for (const [name, keyId] of [['@ai-sdk/anthropic (native route)', 'ai-sdk-anthropic'], ['@ai-sdk/openai .chat() (chat route)', 'ai-sdk-openai']]) {
    describe(name, () => {
      const billedFrom = trackClientTests(() => c);

      it('generateText returns the upstream text and usage', async () => {
        const result = await ai.generateText({ model: providers[keyId](), prompt: 'hello', maxOutputTokens: 200 });
        expect(result.text).to.equal(TEXT_PIECES.join(''));
        expect(result.usage.outputTokens).to.equal(c.agent.reported[c.agent.reported.length - 1].output_tokens);
      });

      it('streamText yields each text delta as the upstream sent it', async () => {
        const result = ai.streamText({ model: providers[keyId](), prompt: 'hello', maxOutputTokens: 200 });
        const texts: string[] = [];
        for await (const text of result.textStream) texts.push(text);
        expect(texts).to.deep.equal(TEXT_PIECES);
      });

      it('runs a tool round trip (streamText): the tool executes and its result reaches the upstream with the same id', async () => {
        c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
        const calls: unknown[] = [];
        const getWeather = ai.tool({
          description: 'Weather of a city',
          inputSchema: ai.jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
          execute: async ({ city }: { city: string }) => {
            calls.push(city);
            return `18 C in ${city}`;
          },
        });
        const result = ai.streamText({ model: providers[keyId](), prompt: 'Weather in Paris?', maxOutputTokens: 200, tools: { get_weather: getWeather }, stopWhen: ai.stepCountIs(3) });
        const text = await result.text;
        expect(calls).to.deep.equal(['Paris']);
        expect(text).to.equal(toolAnswer('get_weather', '18 C in Paris'));
        const [toolResult] = lastToolResults(c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body);
        expect(toolResult.tool_use_id).to.equal(c.agent.toolUseIds[c.agent.toolUseIds.length - 1]);
      });

      if (keyId === 'ai-sdk-openai') {
        it('a tool loop with thinking on opus: the AI SDK rebuilds the assistant message without the signed block, the gateway restores it', async () => {
          c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
          const getWeather = ai.tool({
            description: 'Weather of a city',
            inputSchema: ai.jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
            execute: async ({ city }: { city: string }) => `18 C in ${city}`,
          });
          const model = openai.createOpenAI({ baseURL: `${c.gw.url}/v1`, apiKey: c.keys[keyId] }).chat('opus');
          const result = ai.streamText({
            model, prompt: 'Weather in Paris?', tools: { get_weather: getWeather }, stopWhen: ai.stepCountIs(3),
            providerOptions: { openai: { reasoningEffort: 'high', forceReasoning: true } },
          });
          expect(await result.text).to.equal(toolAnswer('get_weather', '18 C in Paris'));
          const [first, second] = c.gw.upstream.requests.slice(-2).map((request) => request.body);
          expect(first).to.deep.include({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
          expect(second.messages[second.messages.length - 2].content[0]).to.include({ type: 'thinking' });
        });
      }

      it('bills the key exactly the usage the upstream reported', async () => {
        await expectLedgerEquals(c.gw, keyId, c.agent.reported.slice(billedFrom.index));
      });
    });
  }
});
