/**
 * POST /v1/responses end to end with the `openai` SDK (`responses.create`, `responses.stream`)
 * against the gateway and a fake native upstream.
 */
import { expect } from 'chai';
import OpenAI from 'openai';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { createAgentUpstream, toolAnswer } from '../helpers/agent-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import {
  ANSWER_USAGE, THINKING, billedTokens, roundTripHandler, waitForRequestLines,
} from '../helpers/responses-upstream';

const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('Responses API (openai SDK)', () => {
  let gw: TestGateway;
  let client: OpenAI;
  let linesBefore: number;

  before(async () => {
    gw = await startTestGateway({ handler: roundTripHandler() });
    client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
    gw.upstream.setHandler(roundTripHandler());
    linesBefore = gw.logLines.filter((line) => line.message === 'request' && line.route === 'POST /v1/responses').length;
  });
  /** Wait for the settlement of `count` more requests of this test. */
  const settled = (count: number) => waitForRequestLines(gw, linesBefore + count);

  it('responses.create: text in, a completed response with the canonical model, output_text and usage out; billed as reported', async () => {
    const before = await billedTokens(gw, 'team-all');
    const response = await client.responses.create({ model: 'sonnet', instructions: 'Be brief.', input: 'Weather in Paris?', max_output_tokens: 300 });
    expect(response.id).to.match(/^resp_/);
    expect(response).to.include({ object: 'response', status: 'completed', model: 'model-sonnet-4.6' });
    expect(response.output_text).to.equal('It is 18°C in Paris.');
    expect(response.usage).to.deep.include({ input_tokens: 60, output_tokens: 9, total_tokens: 69 });
    const sent = gw.upstream.requests[0].body;
    expect(sent).to.deep.include({ model: 'model-sonnet-4.6', max_tokens: 300, system: 'Be brief.' });
    expect(sent.messages).to.deep.equal([{ role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] }]);
    await settled(1);
    const after = await billedTokens(gw, 'team-all');
    expect([after.input - before.input, after.output - before.output]).to.deep.equal([ANSWER_USAGE.input_tokens, ANSWER_USAGE.output_tokens]);
  });

  it('empty input_text and output_text parts (which the Responses API takes) are left out: the native API refuses an empty text block', async () => {
    const input: ResponseInputItem[] = [
      { role: 'user', content: [{ type: 'input_text', text: '' }, { type: 'input_text', text: 'Hi.' }] },
      { type: 'message', role: 'assistant', status: 'completed', id: 'msg_prior', content: [{ type: 'output_text', text: '', annotations: [] }, { type: 'output_text', text: 'Hello.', annotations: [] }] },
      { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
    ];
    const response = await client.responses.create({ model: 'sonnet', input });
    expect(response.status).to.equal('completed');
    expect(gw.upstream.requests[0].body.messages).to.deep.equal([
      { role: 'user', content: [{ type: 'text', text: 'Hi.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Hello.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
    ]);
    await settled(1);
  });

  it('responses.stream: text deltas, then the final response; billed as reported', async () => {
    const before = await billedTokens(gw, 'team-all');
    const stream = client.responses.stream({ model: 'sonnet', input: 'Weather in Paris?' });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    const final = await stream.finalResponse();
    expect(text).to.equal('It is 18°C in Paris.');
    expect(final.output_text).to.equal(text);
    expect(types.slice(0, 2)).to.deep.equal(['response.created', 'response.in_progress']);
    expect(types).to.include.members(['response.output_item.added', 'response.content_part.added', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done']);
    expect(types[types.length - 1]).to.equal('response.completed');
    expect(final.usage).to.deep.include({ input_tokens: 60, output_tokens: 9 });
    await settled(1);
    const after = await billedTokens(gw, 'team-all');
    expect([after.input - before.input, after.output - before.output]).to.deep.equal([60, 9]);
  });

  it('an image (data URL) reaches the upstream as an image block', async () => {
    await client.responses.create({
      model: 'sonnet',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' }] }],
    });
    expect(gw.upstream.requests[0].body.messages[0].content).to.deep.equal([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
    ]);
  });

  it('a function tool round trip: function_call out, function_call_output back as tool_result for the same id', async () => {
    const input: ResponseInputItem[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const first = await client.responses.create({ model: 'sonnet', input, tools: [WEATHER_TOOL], store: false });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).to.deep.include({ type: 'function_call', call_id: 'toolu_01Paris', name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(first.usage).to.deep.include({ input_tokens: 48, input_tokens_details: { cached_tokens: 8 }, output_tokens: 20 });
    const second = await client.responses.create({
      model: 'sonnet', tools: [WEATHER_TOOL], store: false,
      input: [...input, ...(first.output as ResponseInputItem[]), { type: 'function_call_output', call_id: call!.type === 'function_call' ? call!.call_id : '', output: '18°C' }],
    });
    expect(second.output_text).to.equal('It is 18°C in Paris.');
    const messages = gw.upstream.requests[1].body.messages;
    expect(messages[1]).to.deep.equal({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01Paris', name: 'get_weather', input: { city: 'Paris' } }] });
    expect(messages[2]).to.deep.equal({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Paris', content: '18°C' }] });
    expect(gw.upstream.requests[0].body.tools).to.deep.equal([{ name: 'get_weather', description: 'Current weather for a city', input_schema: WEATHER_TOOL.parameters }]);
  });

  it('a streamed function call: argument deltas and a function_call item in the final response', async () => {
    const stream = client.responses.stream({ model: 'sonnet', input: 'Weather in Paris?', tools: [WEATHER_TOOL], parallel_tool_calls: false });
    let args = '';
    for await (const event of stream) if (event.type === 'response.function_call_arguments.delta') args += event.delta;
    const final = await stream.finalResponse();
    expect(args).to.equal('{"city":"Paris"}');
    expect(final.output.find((item) => item.type === 'function_call')).to.deep.include({ call_id: 'toolu_01Paris', arguments: '{"city":"Paris"}', status: 'completed' });
    expect(gw.upstream.requests[0].body.tool_choice).to.deep.equal({ type: 'auto', disable_parallel_tool_use: true });
  });

  it('reasoning items round-trip across two turns: the thinking block and its signature come back unchanged', async () => {
    gw.upstream.setHandler(roundTripHandler({ thinking: true }));
    const input: ResponseInputItem[] = [{ role: 'user', content: 'Weather in Paris?' }];
    const common = { model: 'sonnet', tools: [WEATHER_TOOL], store: false, include: ['reasoning.encrypted_content' as const], reasoning: { effort: 'low' as const }, max_output_tokens: 4000 };
    const stream = client.responses.stream({ ...common, input });
    const summary: string[] = [];
    for await (const event of stream) if (event.type === 'response.reasoning_summary_text.delta') summary.push(event.delta);
    const first = await stream.finalResponse();
    expect(summary.join('')).to.equal(THINKING.thinking);
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    expect(reasoning?.type === 'reasoning' && reasoning.encrypted_content).to.be.a('string');
    expect(gw.upstream.requests[0].body.thinking).to.deep.equal({ type: 'adaptive' });
    expect(gw.upstream.requests[0].body.output_config).to.deep.equal({ effort: 'low' });
    const call = first.output.find((item) => item.type === 'function_call');
    await client.responses.create({
      ...common,
      input: [...input, ...(first.output as ResponseInputItem[]), { type: 'function_call_output', call_id: call!.type === 'function_call' ? call!.call_id : '', output: '18°C' }],
    });
    expect(gw.upstream.requests[1].body.messages[1].content).to.deep.equal([
      THINKING, { type: 'tool_use', id: 'toolu_01Paris', name: 'get_weather', input: { city: 'Paris' } },
    ]);
  });

  it('previous_response_id continues the stored conversation (its reasoning included)', async () => {
    gw.upstream.setHandler(roundTripHandler({ thinking: true }));
    const first = await client.responses.create({ model: 'sonnet', input: 'Weather in Paris?', tools: [WEATHER_TOOL], reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    // The client did not ask for encrypted_content: it does not get it, but the gateway kept it.
    const reasoning = first.output.find((item) => item.type === 'reasoning');
    expect(reasoning?.type === 'reasoning' && reasoning.encrypted_content).to.equal(null);
    const second = await client.responses.create({
      model: 'sonnet', tools: [WEATHER_TOOL], reasoning: { effort: 'low' }, max_output_tokens: 4000, previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'toolu_01Paris', output: '18°C' }],
    });
    expect(second.previous_response_id).to.equal(first.id);
    expect(second.output_text).to.equal('It is 18°C in Paris.');
    expect(gw.upstream.requests[1].body.messages).to.deep.equal([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [THINKING, { type: 'tool_use', id: 'toolu_01Paris', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Paris', content: '18°C' }] },
    ]);
    const third = await client.responses.create({ model: 'sonnet', input: 'And tomorrow?', previous_response_id: second.id });
    expect(gw.upstream.requests[2].body.messages.map((m: { role: string }) => m.role)).to.deep.equal(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(third.status).to.equal('completed');
  });

  it('a streamed response is stored too: previous_response_id after responses.stream keeps its reasoning', async () => {
    gw.upstream.setHandler(roundTripHandler({ thinking: true }));
    const stream = client.responses.stream({ model: 'sonnet', input: 'Weather in Paris?', tools: [WEATHER_TOOL], reasoning: { effort: 'low' }, max_output_tokens: 4000 });
    const first = await stream.finalResponse();
    await client.responses.create({
      model: 'sonnet', tools: [WEATHER_TOOL], reasoning: { effort: 'low' }, max_output_tokens: 4000, previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: 'toolu_01Paris', output: '18°C' }],
    });
    expect(gw.upstream.requests[1].body.messages[1].content[0]).to.deep.equal(THINKING);
  });

  describe('a tool loop with reasoning, per thinking mode, against an upstream that requires the signed thinking', () => {
    const MODES: Array<[string, string, Record<string, unknown>]> = [
      ['opus (adaptive only)', 'opus', { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } }],
      ['sonnet (adaptive or budget)', 'sonnet', { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } }],
      ['haiku (budget only)', 'haiku', { thinking: { type: 'enabled', budget_tokens: 16384 } }],
      ['opus 5 (thinks by default)', 'model-opus-5', { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } }],
      ['fable 5 (always thinks)', 'model-fable-5', { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } }],
    ];
    const weatherAgent = () => createAgentUpstream({ chooseTool: (offered) => (offered.includes('get_weather') ? { name: 'get_weather', input: { city: 'Paris' } } : null) });
    for (const [name, model, thinking] of MODES) {
      it(`${name}: through previous_response_id, and with store: false plus include reasoning.encrypted_content`, async () => {
        gw.upstream.setHandler(weatherAgent().handler);
        const common = { model, tools: [WEATHER_TOOL], reasoning: { effort: 'high' as const } };
        const first = await client.responses.create({ ...common, input: 'Weather in Paris?' });
        expect(gw.upstream.requests[0].body).to.deep.include(thinking);
        const call = first.output.find((item) => item.type === 'function_call');
        expect(call?.type).to.equal('function_call');
        const callId = call!.type === 'function_call' ? call!.call_id : '';
        const viaStore = await client.responses.create({ ...common, previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: callId, output: '18 C' }] });
        expect(viaStore.status).to.equal('completed');
        expect(viaStore.output_text).to.equal(toolAnswer('get_weather', '18 C'));

        const input: ResponseInputItem[] = [{ role: 'user', content: 'Weather in Paris?' }];
        const stateless = { ...common, store: false, include: ['reasoning.encrypted_content' as const] };
        const again = await client.responses.create({ ...stateless, input });
        const againCall = again.output.find((item) => item.type === 'function_call');
        const reasoning = again.output.find((item) => item.type === 'reasoning');
        expect(reasoning?.type === 'reasoning' && reasoning.encrypted_content).to.be.a('string');
        const answer = await client.responses.create({
          ...stateless,
          input: [...input, ...(again.output as ResponseInputItem[]), { type: 'function_call_output', call_id: againCall?.type === 'function_call' ? againCall.call_id : '', output: '18 C' }],
        });
        expect(answer.output_text).to.equal(toolAnswer('get_weather', '18 C'));
        const sent = gw.upstream.requests[3].body;
        expect(sent.messages[sent.messages.length - 2].content[0]).to.include({ type: 'thinking' });
      });
    }
  });

  it('GET and DELETE /v1/responses/{id} work for the key that made it; another key gets 404', async () => {
    const made = await client.responses.create({ model: 'sonnet', input: 'Hi' });
    const read = await client.responses.retrieve(made.id);
    expect(read).to.deep.include({ id: made.id, status: 'completed' });
    expect(read.output_text).to.equal(made.output_text);
    const other = new OpenAI({ apiKey: KEYS.haikuOnly, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const refused = await other.responses.retrieve(made.id).catch((err: unknown) => err);
    expect(refused).to.be.instanceOf(OpenAI.NotFoundError);
    expect(await other.responses.delete(made.id).catch((err: unknown) => err)).to.be.instanceOf(OpenAI.NotFoundError);
    const reused = await other.responses.create({ model: 'haiku', input: 'Go on', previous_response_id: made.id }).catch((err: unknown) => err);
    expect(reused).to.be.instanceOf(OpenAI.NotFoundError);
    await client.responses.delete(made.id);
    expect(await client.responses.retrieve(made.id).catch((err: unknown) => err)).to.be.instanceOf(OpenAI.NotFoundError);
  });

  it('store: false keeps nothing', async () => {
    const made = await client.responses.create({ model: 'sonnet', input: 'Hi', store: false });
    expect((made as unknown as { store: boolean }).store).to.equal(false);
    expect(await client.responses.retrieve(made.id).catch((err: unknown) => err)).to.be.instanceOf(OpenAI.NotFoundError);
    expect(await gw.gateway.store.getResponse(made.id)).to.equal(null);
  });

  it('an upstream error mid-stream reaches the SDK as response.failed with its message, and what was used is billed', async () => {
    gw.upstream.setHandler(() => ({
      kind: 'stream',
      events: [
        { event: 'message_start', data: { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'model-sonnet-4.6', content: [], stop_reason: null, usage: { input_tokens: 33, output_tokens: 1 } } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Partial answer, forty characters long...' } } },
        { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
      ],
    }));
    const before = await billedTokens(gw, 'team-all');
    const stream = client.responses.stream({ model: 'sonnet', input: 'Hi' });
    const types: string[] = [];
    let failure: any;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.failed') failure = event.response.error;
    }
    expect(types.slice(-2)).to.deep.equal(['response.output_text.delta', 'response.failed']);
    expect((await stream.finalResponse()).status).to.equal('failed');
    expect(failure).to.deep.equal({ code: 'server_error', message: 'Overloaded' });
    await settled(1);
    const after = await billedTokens(gw, 'team-all');
    expect([after.input - before.input, after.output - before.output]).to.deep.equal([33, 10]);
  });
});
