import { expect } from 'chai';
import { emptyUsage } from '../../../lib/context';
import { convertUsageToChat, mergeNativeUsage } from '../../../translators/usage';

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
    expect(usage).to.deep.equal({ input_tokens: 472, output_tokens: 90, cache_creation_input_tokens: 0, cache_read_input_tokens: 8 });
  });

  it('ignores negative, non-numeric and missing values', () => {
    const usage = mergeNativeUsage(emptyUsage(), { input_tokens: -1, output_tokens: '7' as unknown as number });
    expect(usage).to.deep.equal(emptyUsage());
    expect(mergeNativeUsage(emptyUsage(), null)).to.deep.equal(emptyUsage());
  });
});
