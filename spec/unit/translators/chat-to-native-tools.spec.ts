import { expect } from 'chai';
import { TranslationError } from '../../../translators/translation-error';
import { convertToolChoice, convertTools } from '../../../translators/chat-to-native-tools';
import type { ChatTool, ChatToolChoice } from '../../../translators/chat-types';

describe('tools mapping', () => {
  const cases: Array<{ name: string; tools: ChatTool[]; expected: unknown[] }> = [
    {
      name: 'function with description and parameters',
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }],
      expected: [{ name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
    },
    {
      name: 'function without parameters takes no arguments; strict is dropped',
      tools: [{ type: 'function', function: { name: 'now', strict: true } }],
      expected: [{ name: 'now', input_schema: { type: 'object', properties: {} } }],
    },
  ];
  for (const { name, tools, expected } of cases) {
    it(name, () => expect(convertTools(tools)).to.deep.equal(expected));
  }
  it('400 naming the tool for other tool types', () => {
    try {
      convertTools([{ type: 'function', function: { name: 'a' } }, { type: 'custom', custom: { name: 'grammar' } }]);
      expect.fail('should throw');
    } catch (err) {
      expect(err).to.be.instanceOf(TranslationError);
      expect((err as TranslationError).param).to.equal('tools[1].type');
    }
  });
});

describe('tool_choice mapping', () => {
  const cases: Array<[ChatToolChoice | undefined, boolean | undefined, unknown]> = [
    [undefined, undefined, {}],
    ['none', undefined, { toolChoice: { type: 'none' } }],
    ['auto', undefined, { toolChoice: { type: 'auto' } }],
    ['required', undefined, { toolChoice: { type: 'any' } }],
    [{ type: 'function', function: { name: 'get_weather' } }, undefined, { toolChoice: { type: 'tool', name: 'get_weather' } }],
    [undefined, false, { toolChoice: { type: 'auto', disable_parallel_tool_use: true } }],
    ['required', false, { toolChoice: { type: 'any', disable_parallel_tool_use: true } }],
    [{ type: 'function', function: { name: 'f' } }, false, { toolChoice: { type: 'tool', name: 'f', disable_parallel_tool_use: true } }],
    ['none', false, { toolChoice: { type: 'none' } }],
    ['auto', true, { toolChoice: { type: 'auto' } }],
    [
      { type: 'allowed_tools', allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'a' } }] } },
      undefined,
      { toolChoice: { type: 'any' }, allowedTools: ['a'] },
    ],
  ];
  for (const [choice, parallel, expected] of cases) {
    it(`${JSON.stringify(choice)} with parallel_tool_calls ${parallel} -> ${JSON.stringify(expected)}`, () => {
      expect(convertToolChoice(choice, parallel)).to.deep.equal(expected);
    });
  }
  for (const choice of [{ type: 'custom', custom: { name: 'x' } }, { type: 'function', function: {} }, 'sometimes'] as ChatToolChoice[]) {
    it(`400 for tool_choice ${JSON.stringify(choice)}`, () => {
      expect(() => convertToolChoice(choice)).to.throw(TranslationError, /tool_choice/);
    });
  }
});
