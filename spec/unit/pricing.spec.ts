/**
 * Every usage field changes a reply's credits by exactly its published price (lib/billing/pricing.ts), on a
 * model with every price set and on a model priced by input and output alone.
 */
import { expect } from 'chai';
import type { ModelConfig } from '../../lib/config';
import { PUBLISHED_RATIOS, priceUsage, unpricedUsage } from '../../lib/billing/pricing';
import { emptyUsage, mergeNativeUsage, type Usage } from '../../translators/usage';

/** Priced by input and output alone: every other price follows the published ratios. */
const PLAIN: ModelConfig = { id: 'model-plain', upstreamModel: 'model-plain', pricing: { inputPerMillion: 4, outputPerMillion: 20 } };
/** Every price set (as model-opus-4.8 in config.json), with fast mode at 2x. */
const FULL: ModelConfig = {
  id: 'model-full', upstreamModel: 'model-full',
  pricing: { inputPerMillion: 5, outputPerMillion: 25, cacheWritePerMillion: 6.25, cacheReadPerMillion: 0.5, cacheWrite1hPerMillion: 10, webSearchPerRequest: 0.01, fastModeMultiplier: 2 },
};

const BASE = { input_tokens: 1000, output_tokens: 500 };
const usage = (reported: Record<string, unknown>): Usage => mergeNativeUsage(emptyUsage(), reported);
const base = (model: ModelConfig) => priceUsage(model, usage(BASE));

describe('pricing: each usage field at its published price', () => {
  it('names the published ratios in one place', () => {
    expect(PUBLISHED_RATIOS).to.include({ cacheReadOfInput: 0.1, cacheWrite5mOfInput: 1.25, cacheWrite1hOfInput: 2, dataResidency: 1.1, batch: 0.5, webSearchPerRequest: 0.01 });
  });

  it('prices input and output per million tokens', () => {
    expect(base(PLAIN)).to.be.closeTo((1000 * 4 + 500 * 20) / 1e6, 1e-15);
    expect(base(FULL)).to.be.closeTo((1000 * 5 + 500 * 25) / 1e6, 1e-15);
  });

  // [name, extra usage reported, credits it adds on PLAIN (input 4), credits it adds on FULL]
  const additive: Array<[string, Record<string, unknown>, number, number]> = [
    ['cache reads at 0.1x input', { cache_read_input_tokens: 10_000 }, 10_000 * 0.4 / 1e6, 10_000 * 0.5 / 1e6],
    ['5-minute cache writes at 1.25x input', { cache_creation_input_tokens: 10_000 }, 10_000 * 5 / 1e6, 10_000 * 6.25 / 1e6],
    ['1-hour cache writes at 2x input', { cache_creation_input_tokens: 10_000, cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 10_000 } }, 10_000 * 8 / 1e6, 10_000 * 10 / 1e6],
    ['web searches at 10 per 1,000', { server_tool_use: { web_search_requests: 3 } }, 0.03, 0.03],
    ['web fetches: their tokens only', { server_tool_use: { web_fetch_requests: 4 } }, 0, 0],
    ['compaction iterations: their tokens, left out of the top level', {
      iterations: [
        { type: 'compaction', input_tokens: 180_000, output_tokens: 3500 },
        { type: 'message', input_tokens: 1000, output_tokens: 500 },
      ],
    }, (180_000 * 4 + 3500 * 20) / 1e6, (180_000 * 5 + 3500 * 25) / 1e6],
  ];
  for (const [name, extra, plain, full] of additive) {
    it(name, () => {
      expect(priceUsage(PLAIN, usage({ ...BASE, ...extra })) - base(PLAIN)).to.be.closeTo(plain, 1e-12);
      expect(priceUsage(FULL, usage({ ...BASE, ...extra })) - base(FULL)).to.be.closeTo(full, 1e-12);
    });
  }

  // [name, usage field, multiplier on PLAIN (no fast mode), multiplier on FULL]
  const rates: Array<[string, Record<string, unknown>, number, number]> = [
    ['fast mode at the model\'s multiplier', { speed: 'fast' }, 1, 2],
    ['standard speed', { speed: 'standard' }, 1, 1],
    ['data residency at 1.1x', { inference_geo: 'us' }, 1.1, 1.1],
    ['global inference at 1x', { inference_geo: 'global' }, 1, 1],
    ['the batch tier at 0.5x', { service_tier: 'batch' }, 0.5, 0.5],
    ['the priority and standard tiers at 1x', { service_tier: 'priority' }, 1, 1],
    ['modifiers stacked: fast, US-only, batch', { speed: 'fast', inference_geo: 'us', service_tier: 'batch' }, 0.55, 1.1],
  ];
  for (const [name, field, plain, full] of rates) {
    it(name, () => {
      const cached = { ...BASE, cache_read_input_tokens: 2000, ...field };
      const standard = { ...BASE, cache_read_input_tokens: 2000 };
      expect(priceUsage(PLAIN, usage(cached))).to.be.closeTo(priceUsage(PLAIN, usage(standard)) * plain, 1e-12);
      expect(priceUsage(FULL, usage(cached))).to.be.closeTo(priceUsage(FULL, usage(standard)) * full, 1e-12);
    });
  }

  it('server tool fees are not multiplied by the rate', () => {
    const searches = { ...BASE, server_tool_use: { web_search_requests: 2 }, service_tier: 'batch' };
    expect(priceUsage(FULL, usage(searches))).to.be.closeTo(base(FULL) * 0.5 + 0.02, 1e-12);
  });

  it('names what it cannot price: unknown usage fields and fast mode on a model without a multiplier', () => {
    const odd = usage({ ...BASE, speed: 'fast', carbon_grams: 3, server_tool_use: { web_search_requests: 1, image_generation_requests: 2, code_interpreter_requests: 0 } });
    expect(odd.unknown_fields).to.deep.equal(['carbon_grams', 'server_tool_use.image_generation_requests']);
    expect(unpricedUsage(PLAIN, odd)).to.deep.equal(['usage.carbon_grams', 'usage.server_tool_use.image_generation_requests', 'usage.speed=fast on model-plain']);
    expect(unpricedUsage(FULL, odd)).to.deep.equal(['usage.carbon_grams', 'usage.server_tool_use.image_generation_requests']);
    expect(unpricedUsage(FULL, usage({ ...BASE, service_tier: 'standard', inference_geo: 'global', output_tokens_details: { thinking_tokens: 3 } }))).to.deep.equal([]);
  });
});
