/**
 * The OpenAI Agents SDK (`@openai/agents`) through the gateway's Responses route: an Agent with one
 * function tool, run to completion (the SDK calls the model, runs the tool, sends its output back,
 * and reads the final answer), whole and streamed. Tracing is off: nothing leaves the machine.
 */
import { expect } from 'chai';
// The Agents SDK 0.14 is built on openai 6; it keeps its own copy, whose class type differs from ours
// only by its private fields (hence the cast below).
import OpenAI from 'openai-v6';
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { createAgentUpstream } from '../helpers/agent-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { ANSWER_USAGE, CALL_USAGE, billedTokens, roundTripHandler, waitForRequestLines } from '../helpers/responses-upstream';

describe('Responses API (OpenAI Agents SDK)', () => {
  let gw: TestGateway;
  let agent: Agent;
  let client: OpenAI;
  let getWeather: ReturnType<typeof tool>;
  const toolCalls: Array<{ city: string }> = [];

  before(async () => {
    setTracingDisabled(true);
    gw = await startTestGateway({ handler: roundTripHandler() });
    client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    getWeather = tool({
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        toolCalls.push({ city });
        return `18°C in ${city}`;
      },
    });
    agent = new Agent({ name: 'Weather', instructions: 'Answer weather questions.', model: new OpenAIResponsesModel(client as never, 'sonnet'), tools: [getWeather] });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
    toolCalls.length = 0;
  });

  it('runs an Agent with one function tool to completion; both model calls are billed as reported', async () => {
    const before = await billedTokens(gw, 'team-all');
    const lines = gw.logLines.filter((line) => line.message === 'request' && line.route === 'POST /v1/responses').length;
    const result = await run(agent, 'Weather in Paris?');
    expect(result.finalOutput).to.equal('It is 18°C in Paris.');
    expect(toolCalls).to.deep.equal([{ city: 'Paris' }]);
    expect(gw.upstream.requests).to.have.length(2);
    expect(gw.upstream.requests[0].body.system).to.equal('Answer weather questions.');
    const lastTurn = gw.upstream.requests[1].body.messages.at(-1);
    expect(lastTurn.content).to.deep.equal([{ type: 'tool_result', tool_use_id: 'toolu_01Paris', content: '18°C in Paris' }]);
    await waitForRequestLines(gw, lines + 2);
    const after = await billedTokens(gw, 'team-all');
    const reported = CALL_USAGE.input_tokens + CALL_USAGE.cache_read_input_tokens + ANSWER_USAGE.input_tokens;
    expect([after.input - before.input, after.output - before.output]).to.deep.equal([reported, CALL_USAGE.output_tokens + ANSWER_USAGE.output_tokens]);
  });

  it('runs it streamed, too', async () => {
    const result = await run(agent, 'Weather in Paris?', { stream: true });
    let text = '';
    for await (const event of result.toTextStream()) text += event;
    await result.completed;
    expect(text).to.equal('It is 18°C in Paris.');
    expect(result.finalOutput).to.equal('It is 18°C in Paris.');
    expect(toolCalls).to.deep.equal([{ city: 'Paris' }]);
    expect(gw.upstream.requests.every((request) => request.body.stream === true)).to.equal(true);
  });

  for (const [mode, model] of [['adaptive only', 'opus'], ['budget only', 'haiku'], ['always thinking', 'model-fable-5']]) {
    it(`runs it with reasoning on ${model} (${mode}), streamed, against the upstream that requires the signed thinking`, async () => {
      const upstream = createAgentUpstream({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
      gw.upstream.setHandler(upstream.handler);
      const thinking = new Agent({
        name: 'Weather', instructions: 'Answer weather questions.', model: new OpenAIResponsesModel(client as never, model), tools: [getWeather],
        modelSettings: { reasoning: { effort: 'high' } },
      });
      const result = await run(thinking, 'Weather in Paris?', { stream: true });
      for await (const _event of result.toTextStream()) void _event;
      await result.completed;
      expect(toolCalls).to.deep.equal([{ city: 'Paris' }]);
      expect(gw.upstream.requests).to.have.length(2);
      expect(gw.upstream.requests[0].body.thinking).to.be.an('object');
      const sent = gw.upstream.requests[1].body;
      expect(sent.messages[sent.messages.length - 2].content[0]).to.include({ type: 'thinking' });
    });
  }
});
