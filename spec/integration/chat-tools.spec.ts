import { expect } from 'chai';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { FakeHandler, RecordedRequest } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { fixtureStreamEvents } from '../helpers/native-fixtures';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city'] },
  },
};

/** True when the last native user turn carries tool results (the second leg of a tool round trip). */
function hasToolResults(request: RecordedRequest): boolean {
  const last = request.body.messages[request.body.messages.length - 1];
  return Array.isArray(last.content) && last.content.some((block: { type: string }) => block.type === 'tool_result');
}

const roundTrip: FakeHandler = (request) => {
  if (hasToolResults(request)) {
    return {
      kind: 'json',
      body: {
        id: 'msg_final', type: 'message', role: 'assistant', model: request.body.model,
        content: [{ type: 'text', text: 'It is 18°C in Paris.' }], stop_reason: 'end_turn', stop_sequence: null,
        usage: { input_tokens: 60, output_tokens: 9 },
      },
    };
  }
  return {
    kind: 'json',
    body: {
      id: 'msg_tool', type: 'message', role: 'assistant', model: request.body.model,
      content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_01Paris', name: 'get_weather', input: { city: 'Paris' } }],
      stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 40, output_tokens: 20 },
    },
  };
};

/** Streams: the recorded text + two tool calls first, then a text answer once tool results come back. */
const streamingRoundTrip: FakeHandler = (request) => {
  if (hasToolResults(request)) return { kind: 'stream', events: fixtureStreamEvents('text') };
  return { kind: 'stream', events: fixtureStreamEvents('tool-calls') };
};

describe('chat completions with tools (openai client)', () => {
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    gw = await startTestGateway({ handler: roundTrip });
    client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
    gw.upstream.setHandler(roundTrip);
  });

  it('round trip: assistant tool call, tool result, final answer', async () => {
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'Answer briefly.' },
      { role: 'user', content: 'Weather in Paris?' },
    ];
    const first = await client.chat.completions.create({ model: 'sonnet', messages, tools: [WEATHER_TOOL], tool_choice: 'auto' });
    const choice = first.choices[0];
    expect(choice.finish_reason).to.equal('tool_calls');
    expect(choice.message.content).to.equal('Checking.');
    const call = choice.message.tool_calls![0];
    expect(call).to.deep.equal({ id: 'toolu_01Paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    expect(first.model).to.equal('model-sonnet-4.6');

    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: '18°C, sunny' });
    const second = await client.chat.completions.create({ model: 'sonnet', messages, tools: [WEATHER_TOOL] });
    expect(second.choices[0].message.content).to.equal('It is 18°C in Paris.');
    expect(second.choices[0].finish_reason).to.equal('stop');
    expect(second.usage).to.include({ prompt_tokens: 60, completion_tokens: 9, total_tokens: 69 });

    const [firstSent, secondSent] = gw.upstream.requests.map((r) => r.body);
    expect(firstSent.system).to.equal('Answer briefly.');
    expect(firstSent.tools).to.deep.equal([{ name: 'get_weather', description: 'Current weather for a city', input_schema: WEATHER_TOOL.function.parameters }]);
    expect(firstSent.tool_choice).to.deep.equal({ type: 'auto' });
    expect(secondSent.messages).to.deep.equal([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_01Paris', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Paris', content: '18°C, sunny' }] },
    ]);
  });

  it('the streaming helper accumulates tool-call arguments split mid-token', async () => {
    gw.upstream.setHandler(streamingRoundTrip);
    const stream = client.chat.completions.stream({
      model: 'sonnet',
      messages: [{ role: 'user', content: 'Weather in Paris and Zürich?' }],
      tools: [WEATHER_TOOL],
      parallel_tool_calls: true,
    });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0].message;
    expect(final.choices[0].finish_reason).to.equal('tool_calls');
    expect(message.content).to.equal('Let me check both cities…');
    expect(message.tool_calls!.map((call) => [call.id, call.type === 'function' && call.function.name, call.type === 'function' && JSON.parse(call.function.arguments)])).to.deep.equal([
      ['toolu_01Paris', 'get_weather', { city: 'Paris', unit: 'celsius' }],
      ['toolu_02Zurich', 'get_weather', { city: 'Zürich' }],
    ]);
    expect(gw.upstream.requests[0].body.stream).to.equal(true);
  });

  it('runTools (streaming) calls the functions with the accumulated arguments and sends their results back', async () => {
    gw.upstream.setHandler(streamingRoundTrip);
    const calls: unknown[] = [];
    const runner = client.chat.completions.runTools({
      model: 'sonnet',
      stream: true,
      messages: [{ role: 'user', content: 'Weather in Paris and Zürich?' }],
      tools: [{
        type: 'function',
        function: {
          name: 'get_weather',
          description: WEATHER_TOOL.function.description,
          parameters: WEATHER_TOOL.function.parameters,
          parse: JSON.parse,
          function: (args: { city: string }) => {
            calls.push(args);
            return `${args.city}: 18°C`;
          },
        },
      }],
    });
    const content = await runner.finalContent();
    expect(content).to.equal('Héllo, wörld 🌍 — 日本語です。');
    expect(calls).to.deep.equal([{ city: 'Paris', unit: 'celsius' }, { city: 'Zürich' }]);
    const second = gw.upstream.requests[1].body;
    const results = second.messages[second.messages.length - 1].content;
    expect(results).to.deep.equal([
      { type: 'tool_result', tool_use_id: 'toolu_01Paris', content: 'Paris: 18°C' },
      { type: 'tool_result', tool_use_id: 'toolu_02Zurich', content: 'Zürich: 18°C' },
    ]);
  });

  it('tool_choice and parallel_tool_calls reach the upstream', async () => {
    await client.chat.completions.create({
      model: 'sonnet', messages: [{ role: 'user', content: 'Paris?' }], tools: [WEATHER_TOOL],
      tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
    });
    expect(gw.upstream.requests[0].body.tool_choice).to.deep.equal({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true });
  });

  it('400 naming the message when tool-call arguments are not JSON', async () => {
    const error = await client.chat.completions
      .create({
        model: 'sonnet',
        messages: [
          { role: 'user', content: 'Paris?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Par' } }] },
          { role: 'tool', tool_call_id: 'c1', content: '18°C' },
        ],
        tools: [WEATHER_TOOL],
      })
      .catch((err: unknown) => err);
    expect(error).to.be.instanceOf(OpenAI.BadRequestError);
    const apiError = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(apiError.param).to.equal('messages[1].tool_calls[0].function.arguments');
    expect(apiError.message).to.include('messages[1]');
    expect(gw.upstream.requests).to.have.length(0);
  });
});
