/**
 * Client matrix: the native SDK `@anthropic-ai/sdk`, 1.x and 0.x (the `anthropic-sdk-legacy` alias),
 * both pinned, on the gateway's native route (`baseURL: <gateway>`). 0.x sends `x-api-key` with
 * `anthropic-version: 2023-06-01`; 1.x sends `Authorization: Bearer` with a later version date.
 * (core-sdk.spec.ts covers what else these clients do: aliases, count_tokens, models, errors.)
 */
import { expect } from 'chai';
import Anthropic from '@anthropic-ai/sdk';
import AnthropicLegacy from 'anthropic-sdk-legacy';
import { lastToolResults, TEXT_PIECES, toolAnswer } from '../../helpers/agent-upstream';
import { expectLedgerEquals, trackClientTests, startClientGateway, type ClientGateway } from '../../helpers/client-matrix';

const WEATHER_TOOL = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] } };

const VERSIONS: Array<[string, string, (options: { apiKey: string; baseURL: string; maxRetries: number }) => Anthropic]> = [
  ['@anthropic-ai/sdk 1.x', 'anthropic-sdk-1', (options) => new Anthropic(options)],
  ['@anthropic-ai/sdk 0.x', 'anthropic-sdk-0', (options) => new AnthropicLegacy(options) as unknown as Anthropic],
];

describe('clients: @anthropic-ai/sdk through the native route', () => {
  let c: ClientGateway;
  before(async () => {
    c = await startClientGateway(VERSIONS.map(([, keyId]) => keyId));
  });
  after(async () => c?.close());

  for (const [name, keyId, create] of VERSIONS) {
    describe(name, () => {
      let client: Anthropic;
      const billedFrom = trackClientTests(() => c);
      before(() => {
        client = create({ apiKey: c.keys[keyId], baseURL: c.gw.url, maxRetries: 0 });
      });

      it('creates a message', async () => {
        const reply = await client.messages.create({ model: 'sonnet', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
        expect(reply.content).to.deep.equal([{ type: 'text', text: TEXT_PIECES.join('') }]);
        const { model: _model, ...usage } = c.agent.reported[c.agent.reported.length - 1];
        expect(reply.usage).to.include(usage);
      });

      it('streams a message delta by delta', async () => {
        const stream = client.messages.stream({ model: 'sonnet', max_tokens: 100, messages: [{ role: 'user', content: 'hello' }] });
        const texts: string[] = [];
        stream.on('text', (text) => texts.push(text));
        const final = await stream.finalMessage();
        expect(texts).to.deep.equal(TEXT_PIECES);
        expect(final.usage.output_tokens).to.equal(c.agent.reported[c.agent.reported.length - 1].output_tokens);
      });

      it('runs a tool round trip: a streamed tool_use, then the tool_result with the same id reaches the upstream', async () => {
        c.agent.setScript({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
        const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
        const first = await client.messages.stream({ model: 'sonnet', max_tokens: 200, tools: [WEATHER_TOOL], messages }).finalMessage();
        expect(first.stop_reason).to.equal('tool_use');
        const toolUse = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
        expect(toolUse).to.deep.include({ id: c.agent.toolUseIds[c.agent.toolUseIds.length - 1], name: 'get_weather', input: { city: 'Paris' } });

        messages.push({ role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] });
        messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse!.id, content: '18 C and sunny' }] });
        const answer = await client.messages.create({ model: 'sonnet', max_tokens: 200, tools: [WEATHER_TOOL], messages });
        expect(answer.content).to.deep.equal([{ type: 'text', text: toolAnswer('get_weather', '18 C and sunny') }]);
        const [result] = lastToolResults(c.gw.upstream.requests[c.gw.upstream.requests.length - 1].body);
        expect(result.tool_use_id).to.equal(toolUse!.id);
      });

      it('bills the key exactly the usage the upstream reported', async () => {
        await expectLedgerEquals(c.gw, keyId, c.agent.reported.slice(billedFrom.index));
      });
    });
  }
});
