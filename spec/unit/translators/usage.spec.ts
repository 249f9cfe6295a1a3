import { expect } from 'chai';
import { convertNativeResponse } from '../../../translators/native-to-chat-response';
import type { NativeUsage } from '../../../translators/native-types';
import { convertNativeReply } from '../../../translators/responses-response';
import { convertUsageToChat, emptyUsage, mergeNativeUsage, readThinkingTokenCount } from '../../../translators/usage';

describe('usage mapping', () => {
  const cases: Array<{ name: string; native: Record<string, unknown>; chat: Record<string, unknown> }> = [
    {
      name: 'plain input and output',
      native: { input_tokens: 10, output_tokens: 5 },
      chat: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } },
    },
    {
      name: 'prompt tokens include cache writes and reads; cached = reads',
      native: { input_tokens: 25, cache_creation_input_tokens: 10, cache_read_input_tokens: 100, output_tokens: 12 },
      chat: { prompt_tokens: 135, completion_tokens: 12, total_tokens: 147, prompt_tokens_details: { cached_tokens: 100 } },
    },
    {
      name: 'null cache fields count as zero',
      native: { input_tokens: 3, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 1 },
      chat: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0 } },
    },
  ];
  for (const { name, native, chat } of cases) {
    it(name, () => expect(convertUsageToChat(mergeNativeUsage(emptyUsage(), native))).to.deep.equal(chat));
  }

  it('stream usage: message_delta fields overwrite message_start fields, never add', () => {
    const usage = mergeNativeUsage(emptyUsage(), { input_tokens: 472, cache_read_input_tokens: 8, output_tokens: 2 });
    mergeNativeUsage(usage, { output_tokens: 89 });
    mergeNativeUsage(usage, { output_tokens: 90, input_tokens: 472 });
    expect(usage).to.deep.equal({ ...emptyUsage(), input_tokens: 472, output_tokens: 90, cache_read_input_tokens: 8 });
  });

  it('reads the 5 m / 1 h cache write split and the server-side web searches', () => {
    const usage = mergeNativeUsage(emptyUsage(), {
      input_tokens: 50, output_tokens: 7, cache_creation_input_tokens: 300, cache_read_input_tokens: 20,
      cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 }, server_tool_use: { web_search_requests: 3 },
    });
    expect(usage).to.deep.equal({
      ...emptyUsage(), input_tokens: 50, output_tokens: 7, cache_creation_input_tokens: 300, cache_read_input_tokens: 20,
      cache_creation_1h_input_tokens: 200, web_search_requests: 3,
    });
    // A split without the total gives the total; a null server_tool_use leaves the count as it was.
    const splitOnly = mergeNativeUsage(emptyUsage(), { cache_creation: { ephemeral_5m_input_tokens: 4, ephemeral_1h_input_tokens: 6 }, server_tool_use: null });
    expect(splitOnly).to.include({ cache_creation_input_tokens: 10, cache_creation_1h_input_tokens: 6, web_search_requests: 0 });
  });

  it('ignores negative, non-numeric and missing values', () => {
    const usage = mergeNativeUsage(emptyUsage(), { input_tokens: -1, output_tokens: '7' as unknown as number });
    expect(usage).to.deep.equal(emptyUsage());
    expect(mergeNativeUsage(emptyUsage(), null)).to.deep.equal(emptyUsage());
  });
});

describe('thinking tokens (one reader for the chat and the Responses replies)', () => {
  const cases: Array<{ name: string; details: NativeUsage['output_tokens_details']; count: number | undefined }> = [
    { name: 'a reported count', details: { thinking_tokens: 12 }, count: 12 },
    { name: 'zero', details: { thinking_tokens: 0 }, count: 0 },
    { name: 'absent details', details: undefined, count: undefined },
    { name: 'null details', details: null, count: undefined },
    { name: 'a null count', details: { thinking_tokens: null }, count: undefined },
    { name: 'a negative count', details: { thinking_tokens: -3 }, count: undefined },
    { name: 'a string count', details: { thinking_tokens: '5' as unknown as number }, count: undefined },
  ];
  const reply = (details: NativeUsage['output_tokens_details']) => ({
    id: 'msg_1', type: 'message' as const, role: 'assistant' as const, model: 'up', stop_reason: 'end_turn',
    content: [{ type: 'text', text: 'Hi' }], usage: { input_tokens: 3, output_tokens: 20, output_tokens_details: details },
  });
  for (const { name, details, count } of cases) {
    it(`${name}: ${count ?? 'none'} on both routes`, () => {
      expect(readThinkingTokenCount({ output_tokens_details: details })).to.equal(count);
      const chat = convertNativeResponse(reply(details), { model: 'm', created: 1 });
      expect(chat.usage?.completion_tokens_details).to.deep.equal(count === undefined ? undefined : { reasoning_tokens: count });
      const responses = convertNativeReply(reply(details), { id: 'resp_1', createdAt: 1, model: 'm', request: { model: 'm' }, toolNames: new Map(), newId: () => 'id' });
      // The Responses usage always has the field: 0 when the upstream reported none.
      expect(responses.usage?.output_tokens_details).to.deep.equal({ reasoning_tokens: count ?? 0 });
    });
  }
});
