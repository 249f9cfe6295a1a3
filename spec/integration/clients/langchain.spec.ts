/**
 * Client matrix: LangChain (`@langchain/anthropic`'s ChatAnthropic on the native route, and
 * `@langchain/openai`'s ChatOpenAI on the chat-completions route, with `@langchain/core`), all pinned:
 * `invoke`, `stream`, and `bindTools` with the tool's result sent back as a ToolMessage.
 *
 * Settings: `new ChatAnthropic({ model, apiKey, anthropicApiUrl: '<gateway>' })` (no `/v1`: the
 * bundled native SDK adds it); `new ChatOpenAI({ model, apiKey, configuration: { baseURL: '<gateway>/v1' } })`.
 */
import { expect } from 'chai';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { lastToolResults, TEXT_PIECES, toolAnswer } from '../../helpers/agent-upstream';
import { expectLedgerEquals, trackClientTests, startClientGateway, type ClientGateway } from '../../helpers/client-matrix';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

describe('clients: LangChain through both routes', () => {
  let c: ClientGateway;
  let models: Record<string, () => ChatAnthropic | ChatOpenAI>;
  before(async () => {
    c = await startClientGateway(['langchain-anthropic', 'langchain-openai']);
    models = {
      'langchain-anthropic': () => new ChatAnthropic({ model: 'model-sonnet-4.6', apiKey: c.keys['langchain-anthropic'], anthropicApiUrl: c.gw.url, maxTokens: 200, maxRetries: 0 }),
      'langchain-openai': () => new ChatOpenAI({ model: 'sonnet', apiKey: c.keys['langchain-openai'], configuration: { baseURL: `${c.gw.url}/v1` }, maxRetries: 0 }),
    };
  });
  after(async () => c?.close());

  for (const [name, keyId] of [['@langchain/anthropic ChatAnthropic (native route)', 'langchain-anthropic'], ['@langchain/openai ChatOpenAI (chat route)', 'langchain-openai']]) {
    describe(name, () => {
      const billedFrom = trackClientTests(() => c);

      it('invoke returns the upstream text', async () => {
        const reply = await models[keyId]().invoke('hello');
        expect(reply.content).to.satisfy((content: unknown) => textOf(content) === TEXT_PIECES.join(''));
        expect(reply.usage_metadata?.output_tokens).to.equal(c.agent.reported[c.agent.reported.length - 1].output_tokens);
      });

      it('stream yields each text delta as the upstream sent it', async () => {
        const texts: string[] = [];
        for await (const chunk of await models[keyId]().stream('hello')) {
          const text = textOf(chunk.content);
          if (text) texts.push(text);
        }
        expect(texts).to.deep.equal(TEXT_PIECES);
      });

      it('runs a tool round trip with bindTools: the ToolMessage reaches the upstream as the tool_result of the same id', async () => {
        c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
        const model = models[keyId]().bindTools([WEATHER_TOOL]);
        const messages: BaseMessage[] = [new HumanMessage('Weather in Paris?')];
        const first = (await model.invoke(messages)) as AIMessage;
        expect(first.tool_calls).to.have.length(1);
        const [call] = first.tool_calls!;
        expect(call).to.deep.include({ id: c.agent.toolUseIds[c.agent.toolUseIds.length - 1], name: 'get_weather', args: { city: 'Paris' } });
        messages.push(first, new ToolMessage({ tool_call_id: call.id!, content: '18 C and sunny' }));
        const answer = await model.invoke(messages);
        expect(textOf(answer.content)).to.equal(toolAnswer('get_weather', '18 C and sunny'));
        const [result] = lastToolResults(c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body);
        expect(result.tool_use_id).to.equal(call.id);
      });

      if (keyId === 'langchain-openai') {
        it('a tool loop with thinking on opus: LangChain rebuilds the assistant message without the signed block, the gateway restores it', async () => {
          c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
          const opus = new ChatOpenAI({ model: 'opus', apiKey: c.keys[keyId], configuration: { baseURL: `${c.gw.url}/v1` }, maxRetries: 0, modelKwargs: { reasoning_effort: 'high' } });
          const model = opus.bindTools([WEATHER_TOOL]);
          const messages: BaseMessage[] = [new HumanMessage('Weather in Paris?')];
          const first = (await model.invoke(messages)) as AIMessage;
          const firstBody = c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body;
          expect(firstBody).to.deep.include({ thinking: { type: 'adaptive' }, output_config: { effort: 'high' } });
          messages.push(first, new ToolMessage({ tool_call_id: first.tool_calls![0].id!, content: '18 C and sunny' }));
          const answer = await model.invoke(messages);
          expect(textOf(answer.content)).to.equal(toolAnswer('get_weather', '18 C and sunny'));
          const sent = c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body;
          expect(sent.messages[sent.messages.length - 2].content[0]).to.include({ type: 'thinking' });
        });
      }

      it('bills the key exactly the usage the upstream reported', async () => {
        await expectLedgerEquals(c.gw, keyId, c.agent.reported.slice(billedFrom.index));
      });
    });
  }
});

/** The text of a LangChain message content (a string, or content blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { type?: string; text?: string }) => (part?.type === 'text' || part?.type === 'text_delta' ? part.text ?? '' : '')).join('');
}
