/** A batch's results summed for billing (lib/billing/batch-billing.ts): succeeded lines only, per model, from the bytes as received. */
import { expect } from 'chai';
import { sumBatchResults, type BatchPinData } from '../../lib/billing/batch-billing';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { testConfigObject } from '../helpers/gateway';

const catalogue = createCatalogue(parseConfig(testConfigObject('http://127.0.0.1:9'), {}));
const data: BatchPinData = { holds: [], billed: false, models: { a: 'model-haiku-4.5', b: 'model-haiku-4.5', c: 'model-sonnet-4.6', d: 'model-haiku-4.5' } };

const line = (customId: string, result: unknown) => JSON.stringify({ custom_id: customId, result });
const succeeded = (input: number, output: number, text = 'ok') => ({
  type: 'succeeded',
  message: { type: 'message', role: 'assistant', content: [{ type: 'text', text }], usage: { input_tokens: input, output_tokens: output } },
});

describe('sumBatchResults', () => {
  it('sums the succeeded results per model, whatever the line endings and characters; other outcomes and malformed lines count nothing', () => {
    const text = [
      line('a', succeeded(100, 50, 'café — 東京 🚀')),
      line('b', succeeded(10, 5)),
      line('c', succeeded(7, 3)),
      line('d', { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } } }),
      line('e', succeeded(1000, 1000)),
      '{not json',
      '',
    ].join('\r\n');
    const totals = sumBatchResults(Buffer.from(`${text}${line('d', { type: 'canceled' })}`), data, catalogue);
    expect([...totals.keys()].sort()).to.deep.equal(['model-haiku-4.5', 'model-sonnet-4.6']);
    expect(totals.get('model-haiku-4.5')).to.deep.include({ requests: 2 });
    expect(totals.get('model-haiku-4.5')!.usage).to.include({ input_tokens: 110, output_tokens: 55 });
    expect(totals.get('model-sonnet-4.6')!.usage).to.include({ input_tokens: 7, output_tokens: 3 });
    // The batch rate: half the standard price (haiku 1 / 5, sonnet 3 / 15 per million).
    expect(totals.get('model-haiku-4.5')!.credits).to.be.closeTo((110 * 1 + 55 * 5) / 1e6 * 0.5, 1e-12);
  });

  it('prices the results of a batch its target bills apart at that target\'s priceMultiplier', () => {
    const results = Buffer.from([line('a', succeeded(100, 50)), line('c', succeeded(7, 3))].join('\n'));
    const plain = sumBatchResults(results, data, catalogue);
    const dearer = sumBatchResults(results, { ...data, priceMultiplier: 1.1 }, catalogue);
    expect(plain.get('model-haiku-4.5')!.credits).to.be.closeTo((100 * 1 + 50 * 5) / 1e6 * 0.5, 1e-12);
    expect(dearer.get('model-haiku-4.5')!.credits).to.be.closeTo((100 * 1 + 50 * 5) / 1e6 * 0.5 * 1.1, 1e-12);
    expect(dearer.get('model-sonnet-4.6')!.credits).to.be.closeTo((7 * 3 + 3 * 15) / 1e6 * 0.5 * 1.1, 1e-12);
    expect(dearer.get('model-haiku-4.5')!.usage).to.deep.equal(plain.get('model-haiku-4.5')!.usage);
  });

  it('reads a last line without a newline, and nothing from an empty body', () => {
    expect(sumBatchResults(Buffer.from(line('c', succeeded(2, 2))), data, catalogue).get('model-sonnet-4.6')!.requests).to.equal(1);
    expect(sumBatchResults(Buffer.alloc(0), data, catalogue).size).to.equal(0);
  });
});
