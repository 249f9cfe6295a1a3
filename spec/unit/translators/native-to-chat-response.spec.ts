import { expect } from 'chai';
import { convertNativeResponse } from '../../../translators/native-to-chat-response';
import type { NativeMessage } from '../../../translators/native-types';

const message = (content: NativeMessage['content'], stop_reason = 'end_turn'): NativeMessage => ({
  id: 'msg_1', type: 'message', role: 'assistant', model: 'upstream-x', content, stop_reason,
  usage: { input_tokens: 20, output_tokens: 7, cache_read_input_tokens: 5, cache_creation_input_tokens: 0 },
});

describe('native reply -> chat.completion', () => {
  it('text reply', () => {
    expect(convertNativeResponse(message([{ type: 'text', text: 'Hello' }, { type: 'text', text: ' there' }]), { model: 'model-sonnet-4.6', created: 1700000000 })).to.deep.equal({
      id: 'chatcmpl-msg_1',
      object: 'chat.completion',
      created: 1700000000,
      model: 'model-sonnet-4.6',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 25, completion_tokens: 7, total_tokens: 32, prompt_tokens_details: { cached_tokens: 5 } },
    });
  });

  it('tool calls: arguments as JSON strings, content null without text, thinking as reasoning_content and signed thinking_blocks', () => {
    const completion = convertNativeResponse(
      message([
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Zürich' } },
        { type: 'tool_use', id: 'toolu_2', name: 'now', input: {} },
      ], 'tool_use'),
      { model: 'm', created: 1 },
    );
    expect(completion.choices[0].message).to.deep.equal({
      role: 'assistant',
      content: null,
      refusal: null,
      tool_calls: [
        { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Zürich"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'now', arguments: '{}' } },
      ],
      reasoning_content: 'hmm',
      thinking_blocks: [{ type: 'thinking', thinking: 'hmm', signature: 's' }],
    });
    expect(completion.choices[0].finish_reason).to.equal('tool_calls');
  });

  it('text and tool calls together keep the text', () => {
    const completion = convertNativeResponse(message([{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 't', name: 'f', input: { a: 1 } }], 'tool_use'), { model: 'm', created: 1 });
    expect(completion.choices[0].message.content).to.equal('Checking.');
    expect(completion.choices[0].message.tool_calls).to.have.length(1);
  });

  it('maps stop reasons and reports unknown ones', () => {
    const unknown: string[] = [];
    const finish = (stop: string) => convertNativeResponse(message([{ type: 'text', text: 'x' }], stop), { model: 'm', created: 1, onUnknownStopReason: (v) => unknown.push(v) }).choices[0].finish_reason;
    expect(['max_tokens', 'stop_sequence', 'refusal', 'new_reason'].map(finish)).to.deep.equal(['length', 'stop', 'content_filter', 'stop']);
    expect(unknown).to.deep.equal(['new_reason']);
  });
});
