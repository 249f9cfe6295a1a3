import { expect } from 'chai';
import { fromTranslationError } from '../../../lib/http/errors';
import { TranslationError } from '../../../translators/translation-error';
import { clampTemperature, convertChatRequest, convertStop, formatResponseFormatInstruction } from '../../../translators/chat-to-native-request';
import {
  appendTurn,
  convertChatMessages,
  convertImageUrl,
  convertUserContent,
  parseToolArguments,
  sanitizeToolId,
} from '../../../translators/chat-to-native-messages';
import type { ChatCompletionRequest, ChatMessage } from '../../../translators/chat-types';
import type { NativeMessageParam } from '../../../translators/native-types';

const OPTIONS = { upstreamModel: 'upstream-sonnet', defaultMaxTokens: 4096 };

function convert(fields: Partial<ChatCompletionRequest>) {
  return convertChatRequest({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }], ...fields } as ChatCompletionRequest, OPTIONS);
}

/** The translation error a call throws, as the route answers it (status, param, message). */
function rejection(fn: () => unknown): { status: number; param: string | null; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(TranslationError);
    const { status, param, message } = fromTranslationError(err)!;
    return { status, param, message };
  }
  throw new Error('expected a TranslationError');
}

describe('chat request -> native request: messages', () => {
  const cases: Array<{ name: string; messages: ChatMessage[]; system: string[]; native: NativeMessageParam[] }> = [
    {
      name: 'string user content becomes one text block',
      messages: [{ role: 'user', content: 'Hello' }],
      system: [],
      native: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    },
    {
      name: 'system and developer messages anywhere are hoisted in order',
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Hi' },
        { role: 'developer', content: [{ type: 'text', text: 'Use ' }, { type: 'text', text: 'French.' }] },
        { role: 'assistant', content: 'Salut' },
      ],
      system: ['Be terse.', 'Use French.'],
      native: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }, { role: 'assistant', content: [{ type: 'text', text: 'Salut' }] }],
    },
    {
      name: 'consecutive same-role turns merge; empty texts are skipped',
      messages: [{ role: 'user', content: 'a' }, { role: 'user', content: '' }, { role: 'user', content: [{ type: 'text', text: 'b' }, { type: 'text', text: '' }] }],
      system: [],
      native: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }],
    },
    {
      name: 'assistant tool calls become tool_use blocks after the text; tool messages merge into one user turn, then the next user text',
      messages: [
        { role: 'user', content: 'Weather in Paris and Zürich?' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call.2', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18°C' },
        { role: 'tool', tool_call_id: 'call.2', content: [{ type: 'text', text: '12°C' }] },
        { role: 'user', content: 'Thanks' },
      ],
      system: [],
      native: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Zürich?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: '18°C' },
            { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '12°C' }] },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    },
    {
      name: 'assistant with null content and tool calls only; empty tool result omits content',
      messages: [
        { role: 'user', content: 'Go' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'run', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c', content: '' },
      ],
      system: [],
      native: [
        { role: 'user', content: [{ type: 'text', text: 'Go' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'c', name: 'run', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'c' }] },
      ],
    },
    {
      name: 'empty assistant messages are dropped; refusal parts are dropped',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'b' },
      ],
      system: [],
      native: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }],
    },
    {
      name: 'deprecated function_call and function messages become tool_use / tool_result',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{"q":1}' } },
        { role: 'function', name: 'lookup', content: 'found' },
      ],
      system: [],
      native: [
        { role: 'user', content: [{ type: 'text', text: 'a' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_function_1', name: 'lookup', input: { q: 1 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_function_1', content: 'found' }] },
      ],
    },
  ];
  for (const { name, messages, system, native } of cases) {
    it(name, () => {
      expect(convertChatMessages(messages)).to.deep.equal({ system, messages: native });
    });
  }

  const rejections: Array<{ name: string; messages: ChatMessage[]; param: string }> = [
    {
      name: 'invalid tool-call arguments name the message index',
      messages: [{ role: 'user', content: 'a' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":' } }] }],
      param: 'messages[1].tool_calls[0].function.arguments',
    },
    {
      name: 'tool-call arguments that are not an object',
      messages: [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1]' } }] }],
      param: 'messages[0].tool_calls[0].function.arguments',
    },
    { name: 'audio parts', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }], param: 'messages[0].content[0]' },
    { name: 'image parts in a system message', messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }], param: 'messages[0].content[0]' },
    { name: 'image parts in a tool message', messages: [{ role: 'tool', tool_call_id: 'c', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }], param: 'messages[0].content[0]' },
    { name: 'a file part without a PDF', messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'file', file: { file_id: 'file-1' } }] }], param: 'messages[0].content[1]' },
    { name: 'a function message with no function call', messages: [{ role: 'function', name: 'f', content: 'x' }], param: 'messages[0]' },
    { name: 'a tool message without tool_call_id', messages: [{ role: 'tool', content: 'x' }], param: 'messages[0].tool_call_id' },
    { name: 'an unknown role', messages: [{ role: 'critic', content: 'x' }], param: 'messages[0].role' },
  ];
  for (const { name, messages, param } of rejections) {
    it(`400 for ${name}`, () => {
      const error = rejection(() => convertChatMessages(messages));
      expect(error.status).to.equal(400);
      expect(error.param).to.equal(param);
      expect(error.message).to.include(param);
    });
  }
});

describe('chat request -> native request: content parts', () => {
  const images: Array<[string, unknown]> = [
    ['https://example.test/cat.png', { type: 'image', source: { type: 'url', url: 'https://example.test/cat.png' } }],
    ['http://example.test/cat.png', { type: 'image', source: { type: 'url', url: 'http://example.test/cat.png' } }],
    ['data:image/png;base64,iVBORw0KGgo=', { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }],
    ['data:image/jpg;base64,/9j/4AAQ', { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } }],
    ['data:image/webp;name=x.webp;base64,UklGRg==', { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklGRg==' } }],
    ['data:application/pdf;base64,JVBERi0=', { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }],
  ];
  for (const [url, block] of images) {
    it(`image_url ${url.slice(0, 30)} -> ${JSON.stringify(block).slice(0, 60)}`, () => {
      expect(convertImageUrl(url, 'p')).to.deep.equal(block);
    });
  }
  for (const url of ['ftp://example.test/a.png', 'data:image/png,notbase64', 'data:image/bmp;base64,Qk0=', 'cat.png']) {
    it(`400 for image_url ${url}`, () => {
      expect(rejection(() => convertImageUrl(url, 'messages[0].content[1]')).param).to.equal('messages[0].content[1]');
    });
  }
  it('keeps text and image parts in order and drops image detail', () => {
    expect(
      convertUserContent([
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'https://example.test/a.gif', detail: 'high' } },
        { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBE', filename: 'a.pdf' } },
      ], 'messages[0]'),
    ).to.deep.equal([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'url', url: 'https://example.test/a.gif' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } },
    ]);
  });
});

describe('chat request -> native request: helpers', () => {
  it('parseToolArguments: empty means no arguments', () => {
    expect(parseToolArguments('', 'p')).to.deep.equal({});
    expect(parseToolArguments('  ', 'p')).to.deep.equal({});
    expect(parseToolArguments('{"a":[1,2]}', 'p')).to.deep.equal({ a: [1, 2] });
  });
  it('sanitizeToolId keeps valid ids and replaces other characters', () => {
    const cases: Array<[string, string]> = [['call_abc-1', 'call_abc-1'], ['call.1:x', 'call_1_x'], ['toolu_01A', 'toolu_01A'], ['é', '_']];
    for (const [id, sanitized] of cases) expect(sanitizeToolId(id), id).to.equal(sanitized);
  });
  it('appendTurn puts tool results before other blocks of the same user turn', () => {
    const messages: NativeMessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'x' }] }];
    appendTurn(messages, 'user', [{ type: 'tool_result', tool_use_id: 'a' }]);
    appendTurn(messages, 'user', [{ type: 'tool_result', tool_use_id: 'b' }]);
    appendTurn(messages, 'assistant', []);
    expect(messages).to.deep.equal([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a' }, { type: 'tool_result', tool_use_id: 'b' }, { type: 'text', text: 'x' }] }]);
  });
});

describe('chat request -> native request: fields', () => {
  const cases: Array<{ name: string; fields: Partial<ChatCompletionRequest>; expected: Record<string, unknown>; warnings?: RegExp[] }> = [
    { name: 'defaults max_tokens per model', fields: {}, expected: { model: 'upstream-sonnet', max_tokens: 4096 } },
    { name: 'max_completion_tokens wins over max_tokens', fields: { max_completion_tokens: 300, max_tokens: 200 }, expected: { max_tokens: 300 } },
    { name: 'max_tokens', fields: { max_tokens: 200 }, expected: { max_tokens: 200 } },
    { name: 'stop string', fields: { stop: 'END' }, expected: { stop_sequences: ['END'] } },
    { name: 'stop array, whitespace-only dropped with a warning', fields: { stop: ['a', ' \n', 'b'] }, expected: { stop_sequences: ['a', 'b'] }, warnings: [/whitespace-only stop/] },
    { name: 'temperature in range passes', fields: { temperature: 0.3, top_p: 0.9 }, expected: { temperature: 0.3, top_p: 0.9 } },
    { name: 'temperature above 1 is clamped with a warning', fields: { temperature: 1.7 }, expected: { temperature: 1 }, warnings: [/temperature 1\.7 clamped to 1/] },
    { name: 'user -> metadata.user_id', fields: { user: 'u_7f3a' }, expected: { metadata: { user_id: 'u_7f3a' } } },
    { name: 'stream', fields: { stream: true, stream_options: { include_usage: true } }, expected: { stream: true } },
    { name: 'n = 1 is fine', fields: { n: 1 }, expected: { max_tokens: 4096 } },
    {
      name: 'response_format json_object: instruction appended to system, with a warning',
      fields: { messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'Hi' }], response_format: { type: 'json_object' } },
      expected: { system: 'Be terse.\nRespond with a single valid JSON object. Output only the JSON value: no prose before or after it and no code fences.' },
      warnings: [/response_format json_object is best effort/],
    },
    {
      name: 'tools and tool_choice',
      fields: {
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } }],
        tool_choice: 'required',
        parallel_tool_calls: false,
      },
      expected: {
        tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
      },
    },
  ];
  for (const { name, fields, expected, warnings = [] } of cases) {
    it(name, () => {
      const result = convert(fields);
      expect(result.request).to.deep.include(expected);
      expect(result.warnings).to.have.length(warnings.length);
      warnings.forEach((pattern, i) => expect(result.warnings[i]).to.match(pattern));
    });
  }

  it('ignores fields without a native counterpart and never forwards them', () => {
    const { request } = convert({
      logprobs: true, seed: 7, presence_penalty: 1, frequency_penalty: 1, logit_bias: { 1: 2 }, metadata: { a: 'b' },
      store: true, service_tier: 'flex', reasoning_effort: 'high', modalities: ['text'], some_future_field: { x: 1 },
    });
    expect(Object.keys(request).sort()).to.deep.equal(['max_tokens', 'messages', 'model']);
  });

  it('drops tool_choice when no tools are given', () => {
    expect(convert({ tool_choice: 'auto', parallel_tool_calls: false }).request).not.to.have.property('tool_choice');
  });

  it('400 on messages when only system messages (or empty ones) are given', () => {
    const error = rejection(() => convert({ messages: [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: '' }] }));
    expect(error).to.include({ status: 400, param: 'messages' });
  });

  it('400 for n > 1', () => {
    const error = rejection(() => convert({ n: 2 }));
    expect(error).to.include({ status: 400, param: 'n' });
  });

  it('400 when tool_choice names a tool that is not given', () => {
    const error = rejection(() => convert({ tools: [{ type: 'function', function: { name: 'a' } }], tool_choice: { type: 'function', function: { name: 'b' } } }));
    expect(error.param).to.equal('tool_choice.function.name');
  });

  it('clampTemperature table', () => {
    const cases: Array<[number, number, boolean]> = [[0, 0, false], [1, 1, false], [0.5, 0.5, false], [2, 1, true], [1.01, 1, true], [-0.5, 0, true]];
    for (const [input, value, warned] of cases) {
      const result = clampTemperature(input);
      expect(result.temperature, String(input)).to.equal(value);
      expect(result.warning !== undefined, String(input)).to.equal(warned);
    }
  });

  it('convertStop table', () => {
    expect(convertStop(undefined)).to.deep.equal({ stopSequences: [] });
    expect(convertStop(null)).to.deep.equal({ stopSequences: [] });
    expect(convertStop('x')).to.deep.equal({ stopSequences: ['x'] });
    expect(convertStop([' ']).stopSequences).to.deep.equal([]);
  });

  it('formatResponseFormatInstruction: json_schema names the schema; text needs none', () => {
    expect(formatResponseFormatInstruction({ type: 'text' })).to.equal(undefined);
    expect(formatResponseFormatInstruction(null)).to.equal(undefined);
    const instruction = formatResponseFormatInstruction({
      type: 'json_schema', json_schema: { name: 'weather', schema: { type: 'object', properties: { temp: { type: 'number' } }, required: ['temp'] } },
    });
    expect(instruction).to.include('"weather"');
    expect(instruction).to.include('{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}');
  });
});
