import { expect } from 'chai';
import { encodeReasoning } from '../../../translators/responses-reasoning';
import { convertResponsesRequest, DEFAULT_THINKING_BUDGETS } from '../../../translators/responses-request';
import type { ModelCapabilities } from '../../../translators/model-capabilities';
import { convertNativeReply, viewOutputForClient } from '../../../translators/responses-response';
import { TranslationError, type ResponsesRequest } from '../../../translators/responses-types';
import { counterIds } from '../../helpers/responses-fixtures';

/** A budget-only model taking every sampling field (the rules per model are in model-capabilities.spec.ts). */
const BUDGET_MODEL: ModelCapabilities = { thinking: 'budget', sampling: ['temperature', 'top_p', 'top_k'], maxOutputTokens: 64000, contextWindow: 200000, minCacheableTokens: 1024 };
const OPTIONS = { upstreamModel: 'up-sonnet', defaultMaxTokens: 4096, thinkingBudgets: DEFAULT_THINKING_BUDGETS, capabilities: BUDGET_MODEL };
const convert = (body: Partial<ResponsesRequest>) => convertResponsesRequest({ model: 'sonnet', input: 'hi', ...body } as ResponsesRequest, OPTIONS);
const PNG = 'iVBORw0KGgo=';

/** Expect a translation error naming `param`. */
function expectRefused(body: Partial<ResponsesRequest>, param: string): void {
  try {
    convert(body);
  } catch (err) {
    expect(err).to.be.instanceOf(TranslationError);
    expect((err as TranslationError).param).to.equal(param);
    expect((err as Error).message).to.contain(param.split('.')[0].replace(/\[.*/, ''));
    return;
  }
  expect.fail(`expected a refusal naming ${param}`);
}

describe('Responses request translator', () => {
  describe('input items -> native turns (table)', () => {
    const cases: Array<{ title: string; input: any; messages: unknown[]; system?: string }> = [
      { title: 'a string is one user turn', input: 'Hello', messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }] },
      {
        title: 'input_text / output_text parts and roles',
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'Q' }] },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A', annotations: [] }] },
          { role: 'user', content: 'Q2' },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Q' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'A' }] },
          { role: 'user', content: [{ type: 'text', text: 'Q2' }] },
        ],
      },
      {
        title: 'system and developer messages join the instructions',
        input: [{ role: 'developer', content: 'Be brief.' }, { role: 'system', content: [{ type: 'input_text', text: 'No emoji.' }] }, { role: 'user', content: 'Hi' }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
        system: 'Base.\n\nBe brief.\n\nNo emoji.',
      },
      {
        title: 'input_image: URL and data URL',
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' }] }],
        messages: [{ role: 'user', content: [
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ] }],
      },
      {
        title: 'input_file: a PDF data URL becomes a document block',
        input: [{ role: 'user', content: [{ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }] }],
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] }],
      },
      {
        title: 'function_call -> tool_use with call_id as id; consecutive outputs merged into one user turn',
        input: [
          { role: 'user', content: 'Weather?' },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
          { type: 'function_call', call_id: 'call_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
          { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
          { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'rain' }] },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
          { role: 'assistant', content: [
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { city: 'Rome' } },
          ] },
          { role: 'user', content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' },
            { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: 'rain' }] },
          ] },
        ],
      },
      {
        title: 'reasoning items become the thinking block their encrypted_content carries, in the assistant turn',
        input: [
          { role: 'user', content: 'Go' },
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'edited by client' }], encrypted_content: encodeReasoning({ type: 'thinking', thinking: 'exact', signature: 'sig' }) },
          { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '' },
          { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Go' }] },
          { role: 'assistant', content: [{ type: 'thinking', thinking: 'exact', signature: 'sig' }, { type: 'tool_use', id: 'call_1', name: 'f', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'ok' }] },
        ],
      },
      {
        title: 'namespaced and custom tool calls',
        input: [
          { role: 'user', content: 'Go' },
          { type: 'function_call', call_id: 'c1', name: 'lookup', namespace: 'crm', arguments: '{"id":7}' },
          { type: 'custom_tool_call', call_id: 'c2', name: 'apply_patch', input: '*** Begin Patch' },
          { type: 'custom_tool_call_output', call_id: 'c2', output: 'done' },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Go' }] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'c1', name: 'crm__lookup', input: { id: 7 } }, { type: 'tool_use', id: 'c2', name: 'apply_patch', input: { input: '*** Begin Patch' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c2', content: 'done' }] },
        ],
      },
      {
        title: 'empty text parts are dropped (the native API refuses an empty text block), and a turn left empty with them',
        input: [
          { role: 'user', content: [{ type: 'input_text', text: '' }, { type: 'input_text', text: 'Weather?' }] },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '', annotations: [] }] },
          { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_text', text: '' }] },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather?' }] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1' }] },
        ],
      },
    ];
    for (const { title, input, messages, system } of cases) {
      it(title, () => {
        const { request } = convert({ input, instructions: system ? 'Base.' : undefined });
        expect(request.messages).to.deep.equal(messages);
        if (system) expect(request.system).to.equal(system);
      });
    }
  });

  describe('refusals name the field (table)', () => {
    const cases: Array<{ title: string; input: any; param: string }> = [
      { title: 'an unknown item type', input: [{ type: 'item_reference', id: 'x' }], param: 'input[0].type' },
      { title: 'an unknown content part', input: [{ role: 'user', content: [{ type: 'input_audio' }] }], param: 'input[0].content[0].type' },
      { title: 'an image by file_id', input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }], param: 'input[0].content[0].image_url' },
      { title: 'a non-PDF file', input: [{ role: 'user', content: [{ type: 'input_file', file_data: 'data:text/plain;base64,aGk=' }] }], param: 'input[0].content[0].file_data' },
      { title: 'unparsable call arguments', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{' }], param: 'input[0].arguments' },
      { title: 'a call output without call_id', input: [{ type: 'function_call_output', output: 'x' }], param: 'input[0].call_id' },
      { title: 'a message with an unknown role', input: [{ role: 'tool', content: 'x' }], param: 'input[0].role' },
      { title: 'nothing to answer', input: [{ role: 'system', content: 'only system' }], param: 'input' },
    ];
    for (const { title, input, param } of cases) it(title, () => expectRefused({ input }, param));
  });

  describe('features the gateway cannot honour are refused, not ignored (table)', () => {
    for (const [field, value] of [['conversation', 'conv_1'], ['prompt', { id: 'pmpt_1' }], ['background', true]] as const) {
      it(field, () => expectRefused({ [field]: value } as Partial<ResponsesRequest>, field));
    }
    it('background false is fine', () => expect(convert({ background: false } as Partial<ResponsesRequest>).request.messages).to.have.length(1));
  });

  describe('tools and tool_choice (table)', () => {
    const fn = { type: 'function', name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
    const cases: Array<{ title: string; body: any; tools?: string[]; choice?: unknown; dropped?: string[] }> = [
      { title: 'function tools', body: { tools: [fn] }, tools: ['get_weather'] },
      { title: 'web_search -> the native web search server tool', body: { tools: [{ type: 'web_search' }] }, tools: ['web_search'] },
      { title: 'namespace tools flattened as <namespace>__<name>', body: { tools: [{ type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup' }] }] }, tools: ['crm__lookup'] },
      { title: 'tools with no native counterpart dropped, never refused; local_shell mapped', body: { tools: [fn, { type: 'local_shell' }, { type: 'image_generation' }] }, tools: ['get_weather', 'local_shell'], dropped: ['image_generation'] },
      { title: 'tool_choice required -> any', body: { tools: [fn], tool_choice: 'required' }, choice: { type: 'any' } },
      { title: 'tool_choice none', body: { tools: [fn], tool_choice: 'none' }, choice: { type: 'none' } },
      { title: 'tool_choice function -> tool', body: { tools: [fn], tool_choice: { type: 'function', name: 'get_weather' } }, choice: { type: 'tool', name: 'get_weather' } },
      { title: 'parallel_tool_calls false -> disable_parallel_tool_use', body: { tools: [fn], parallel_tool_calls: false }, choice: { type: 'auto', disable_parallel_tool_use: true } },
      { title: 'allowed_tools narrows the tools', body: { tools: [fn, { ...fn, name: 'other' }], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'other' }] } }, tools: ['other'], choice: { type: 'any' } },
      { title: 'no tools: no tool_choice', body: { tool_choice: 'required' }, tools: [] },
    ];
    for (const { title, body, tools, choice, dropped } of cases) {
      it(title, () => {
        const converted = convert(body);
        if (tools) expect((converted.request.tools ?? []).map((tool) => tool.name)).to.deep.equal(tools);
        if (choice) expect(converted.request.tool_choice).to.deep.equal(choice);
        expect(converted.droppedTools).to.deep.equal(dropped ?? []);
      });
    }

    it('refuses a tool_choice naming no tool', () => expectRefused({ tools: [fn as any], tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice.name'));
  });

  describe('sampling, limits, reasoning and format (table)', () => {
    const cases: Array<{ title: string; body: any; expected: Record<string, unknown>; absent?: string[] }> = [
      { title: 'max_output_tokens -> max_tokens', body: { max_output_tokens: 300 }, expected: { max_tokens: 300 } },
      { title: 'no max_output_tokens: the model default', body: {}, expected: { max_tokens: 4096 } },
      { title: 'temperature and top_p pass', body: { temperature: 0.2, top_p: 0.9 }, expected: { temperature: 0.2, top_p: 0.9 } },
      { title: 'temperature above 1 is clamped', body: { temperature: 1.6 }, expected: { temperature: 1 } },
      { title: 'reasoning.effort -> thinking budget of that effort', body: { reasoning: { effort: 'medium' }, max_output_tokens: 20000 }, expected: { thinking: { type: 'enabled', budget_tokens: 8192 } } },
      { title: 'the budget stays below max_tokens', body: { reasoning: { effort: 'high' }, max_output_tokens: 5000 }, expected: { thinking: { type: 'enabled', budget_tokens: 4999 } } },
      { title: 'no max_output_tokens: at most half the model default goes to thinking', body: { reasoning: { effort: 'high' } }, expected: { max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 } } },
      { title: 'no room for the minimum budget: no thinking', body: { reasoning: { effort: 'low' }, max_output_tokens: 800 }, expected: {}, absent: ['thinking'] },
      { title: 'effort none: no thinking', body: { reasoning: { effort: 'none' } }, expected: {}, absent: ['thinking'] },
      { title: 'thinking drops temperature', body: { reasoning: { effort: 'low' }, temperature: 0.3 }, expected: { thinking: { type: 'enabled', budget_tokens: 2048 } }, absent: ['temperature'] },
      { title: 'safety_identifier -> metadata.user_id', body: { safety_identifier: 'u-hash', user: 'other', metadata: { a: 'b' }, prompt_cache_key: 'k' }, expected: { metadata: { user_id: 'u-hash' } } },
      { title: 'user -> metadata.user_id', body: { user: 'u1' }, expected: { metadata: { user_id: 'u1' } } },
      { title: 'stream passes', body: { stream: true }, expected: { stream: true } },
    ];
    for (const { title, body, expected, absent } of cases) {
      it(title, () => {
        const { request } = convert(body);
        for (const [field, value] of Object.entries(expected)) expect(request[field as keyof typeof request], field).to.deep.equal(value);
        for (const field of absent ?? []) expect(request).not.to.have.property(field);
        expect(request.model).to.equal('up-sonnet');
      });
    }

    it('text.format json_schema becomes a system instruction with the schema, and a warning', () => {
      const { request, warnings } = convert({ instructions: 'Base.', text: { format: { type: 'json_schema', name: 'city', schema: { type: 'object', properties: { name: { type: 'string' } } } } } });
      expect(request.system).to.match(/^Base\.\n\nRespond with a single JSON value named "city".*"properties":\{"name"/s);
      expect(warnings.join()).to.contain('text.format json_schema is best effort');
    });

    it('previous items come before the new input', () => {
      const { request } = convertResponsesRequest({ model: 'm', input: 'Second' }, { ...OPTIONS, previousItems: [{ role: 'user', content: 'First' }, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Answer' }] }] });
      expect(request.messages.map((m) => [m.role, (m.content[0] as any).text])).to.deep.equal([['user', 'First'], ['assistant', 'Answer'], ['user', 'Second']]);
    });
  });
});

describe('Responses reply translator', () => {
  const reply = {
    id: 'msg_1', type: 'message' as const, role: 'assistant' as const, model: 'up-sonnet', stop_reason: 'tool_use',
    content: [
      { type: 'thinking', thinking: 'hmm', signature: 'sig' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'crm__lookup', input: { id: 7 } },
    ],
    usage: { input_tokens: 5, cache_read_input_tokens: 20, cache_creation_input_tokens: null, output_tokens: 9 },
  };
  const options = {
    id: 'resp_1', createdAt: 1, model: 'model-sonnet-4.6', request: { model: 'sonnet', input: 'x', max_output_tokens: 50 },
    toolNames: new Map([['crm__lookup', { name: 'lookup', namespace: 'crm', kind: 'function' as const }]]), newId: counterIds(),
  };

  it('lists reasoning, message and function_call items with the canonical model and usage', () => {
    const response = convertNativeReply(reply, options);
    expect(response).to.include({ id: 'resp_1', object: 'response', status: 'completed', model: 'model-sonnet-4.6', max_output_tokens: 50 });
    expect(response.output.map((item) => item.type)).to.deep.equal(['reasoning', 'message', 'function_call']);
    expect(response.output[2]).to.deep.include({ call_id: 'toolu_1', name: 'lookup', namespace: 'crm', arguments: '{"id":7}' });
    expect(response.usage).to.deep.equal({ input_tokens: 25, input_tokens_details: { cached_tokens: 20 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 34 });
  });

  it('max_tokens -> incomplete with reason max_output_tokens', () => {
    const response = convertNativeReply({ ...reply, stop_reason: 'max_tokens' }, { ...options, newId: counterIds() });
    expect(response.status).to.equal('incomplete');
    expect(response.incomplete_details).to.deep.equal({ reason: 'max_output_tokens' });
  });

  it('hides encrypted_content from a client that did not include it', () => {
    const response = convertNativeReply(reply, { ...options, newId: counterIds() });
    expect((viewOutputForClient(response.output, false)[0] as any).encrypted_content).to.equal(null);
    expect((viewOutputForClient(response.output, true)[0] as any).encrypted_content).to.match(/^gw1\./);
  });
});
