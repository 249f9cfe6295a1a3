import { expect } from 'chai';
import { convertUsageToChat, emptyUsage, mergeNativeUsage } from '../../../translators/usage';

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
