/** The usage check before settlement (lib/billing/usage-sanity.ts): impossible figures are found, real ones never. */
import { expect } from 'chai';
import { findImpossibleUsage } from '../../lib/billing/usage-sanity';
import { parseConfig } from '../../lib/config';
import { createCatalogue } from '../../lib/config/catalogue';
import { emptyUsage } from '../../translators/usage';
import { testConfigObject } from '../helpers/gateway';

describe('usage check', () => {
  const model = { ...createCatalogue(parseConfig(testConfigObject('http://127.0.0.1:9'), {})).resolve('model-haiku-4.5')! };
  model.capabilities = { ...model.capabilities!, contextWindow: 200_000, maxOutputTokens: 64_000 };
  const usage = (fields: Record<string, number>) => Object.assign(emptyUsage(), fields);

  it('accepts a reply that read past the model\'s own window through the 1M window beta', () => {
    expect(findImpossibleUsage(model, usage({ input_tokens: 500_000, output_tokens: 100 }))).to.equal(null);
    expect(findImpossibleUsage(model, usage({ input_tokens: 10, cache_read_input_tokens: 900_000, output_tokens: 1 }))).to.equal(null);
  });

  it('finds figures no reply can carry', () => {
    expect(findImpossibleUsage(model, usage({ input_tokens: 1e15, output_tokens: 1 }))).to.match(/input tokens past/);
    expect(findImpossibleUsage(model, usage({ input_tokens: 1.5, output_tokens: 1 }))).to.match(/not a non-negative integer/);
    expect(findImpossibleUsage(model, usage({ input_tokens: 10, output_tokens: 64_001 }))).to.match(/output ceiling 64000/);
    expect(findImpossibleUsage(model, usage({ input_tokens: 10, output_tokens: 2, web_search_requests: 3 }))).to.match(/server-tool requests/);
  });
});
