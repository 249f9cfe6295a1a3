/**
 * Cloud targets in config.json (lib/config/cloud-targets.ts): what each provider's fields resolve to,
 * the clouds' default endpoints, and the start-stopping messages that say how to fix a mistake.
 */
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../lib/config';
import { holdPriceMultiplier } from '../../lib/config/key-groups';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');
const ids: string[] = shipped.models.map((model: { id: string }) => model.id);
const everyModel = (prefix: string) => Object.fromEntries(ids.map((id) => [id, `${prefix}${id}`]));

function parse(targets: Array<Record<string, unknown>>) {
  return parseConfig({ ...shipped, upstream: { targets } }, { BEDROCK_KEY: 'b', FOUNDRY_KEY: 'f', UPSTREAM_API_KEY: 'u' });
}

describe('cloud targets config', () => {
  it('resolves a target per provider, with the clouds\' default endpoints and no default credential for clouds', () => {
    const config = parse([
      { id: 'first', url: 'https://api.example' },
      { id: 'aws', provider: 'bedrock', region: 'us-east-1', modelIds: everyModel('us.anthropic.'), priceMultiplier: 1.1 },
      { id: 'gcp', provider: 'vertex', region: 'us-east5', projectId: 'my-project-1', modelIds: { 'model-sonnet-4.6': 'claude-sonnet-4-6' } },
      { id: 'gcp-global', provider: 'vertex', region: 'global', projectId: 'my-project-1', modelIds: { 'model-sonnet-4.6': 'claude-sonnet-4-6' } },
      { id: 'azure', provider: 'foundry', url: 'https://res.services.ai.azure.com/anthropic/', apiKeyEnv: 'FOUNDRY_KEY', modelIds: { 'model-sonnet-4.6': 'my-sonnet' } },
    ]);
    const [first, aws, gcp, global, azure] = config.upstream.targets;
    expect(first).to.deep.include({ provider: 'anthropic', modelIds: null, apiKeyEnvs: ['UPSTREAM_API_KEY'], priceMultiplier: 1 });
    expect(aws).to.deep.include({ provider: 'bedrock', url: 'https://bedrock-runtime.us-east-1.amazonaws.com', region: 'us-east-1', apiKeyEnvs: [], priceMultiplier: 1.1 });
    expect(aws.models).to.deep.equal(ids);
    expect(gcp).to.deep.include({ url: 'https://us-east5-aiplatform.googleapis.com', projectId: 'my-project-1', models: ['model-sonnet-4.6'] });
    expect(global.url).to.equal('https://aiplatform.googleapis.com');
    expect(azure).to.deep.include({ url: 'https://res.services.ai.azure.com/anthropic', apiKeyEnvs: ['FOUNDRY_KEY'] });
    // The hold covers the dearest target that may serve the model.
    expect(holdPriceMultiplier(config.keyGroups[0], 'model-sonnet-4.6')).to.equal(1.1);
  });

  it('holds a request not routed by model (a batch) at the dearest of the targets that may take it, whatever models they list', () => {
    const config = parse([
      { id: 'first', url: 'https://api.example' },
      { id: 'second', url: 'https://api2.example', models: ['model-sonnet-4.6'], priceMultiplier: 2 },
      { id: 'aws', provider: 'bedrock', region: 'us-east-1', modelIds: { 'model-haiku-4.5': 'us.anthropic.haiku' }, priceMultiplier: 3 },
    ]);
    const group = config.keyGroups[0];
    // A message is held at the dearest target serving its model.
    expect(holdPriceMultiplier(group, 'model-haiku-4.5')).to.equal(3);
    expect(holdPriceMultiplier(group, 'model-opus-4.6')).to.equal(1);
    // A batch of haiku requests may be created on "second", which lists only sonnet; never on bedrock.
    const offersBatches = (t: { provider: string }) => t.provider === 'anthropic';
    expect(holdPriceMultiplier(group, null, offersBatches)).to.equal(2);
    expect(holdPriceMultiplier(group, null, (t) => t.id === 'first')).to.equal(1);
    expect(holdPriceMultiplier(group, null)).to.equal(3);
    expect(holdPriceMultiplier(undefined, null)).to.equal(1);
  });

  it('keeps a cloud target\'s url as its origin (VPC endpoints, tests)', () => {
    const config = parse([{ id: 'aws', provider: 'bedrock', region: 'eu-west-1', url: 'http://127.0.0.1:9/', modelIds: everyModel('eu.anthropic.') }]);
    expect(config.upstream.targets[0].url).to.equal('http://127.0.0.1:9');
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['a cloud target without modelIds', { id: 'aws', provider: 'bedrock', region: 'us-east-1' }, 'needs "modelIds"'],
    ['a served model without a model ID', { id: 'aws', provider: 'bedrock', region: 'us-east-1', models: ['model-sonnet-4.6', 'model-haiku-4.5'], modelIds: { 'model-sonnet-4.6': 'x' } }, 'serves "model-haiku-4.5" without a model ID: add "model-haiku-4.5"'],
    ['a modelIds key not in the catalogue', { id: 'aws', provider: 'bedrock', region: 'us-east-1', modelIds: { 'no-such': 'x' } }, '"no-such" is not a catalogue model id'],
    ['bedrock without region', { id: 'aws', provider: 'bedrock', modelIds: everyModel('') }, 'needs its AWS "region"'],
    ['vertex without projectId', { id: 'gcp', provider: 'vertex', region: 'us-east5', modelIds: everyModel('') }, 'needs its Google Cloud "projectId"'],
    ['vertex without region', { id: 'gcp', provider: 'vertex', projectId: 'my-project-1', modelIds: everyModel('') }, 'needs its "region"'],
    ['vertex with an API key', { id: 'gcp', provider: 'vertex', region: 'us-east5', projectId: 'my-project-1', apiKeyEnv: 'X', modelIds: everyModel('') }, 'GOOGLE_APPLICATION_CREDENTIALS'],
    ['foundry without url', { id: 'az', provider: 'foundry', modelIds: everyModel('') }, 'needs "url"'],
    ['modelIds on a first-party target', { id: 'a', url: 'https://api.example', modelIds: { 'model-sonnet-4.6': 'x' } }, 'is for cloud targets'],
    ['a first-party target without url', { id: 'a' }, 'needs its "url"'],
  ];
  for (const [what, target, message] of invalid) {
    it(`stops the start on ${what}, saying how to fix it`, () => {
      expect(() => parse([target])).to.throw(ConfigError, message);
    });
  }

  it('stops the start when a cloud target serves too few models for its group', () => {
    expect(() => parse([{ id: 'gcp', provider: 'vertex', region: 'us-east5', projectId: 'my-project-1', modelIds: { 'model-sonnet-4.6': 'claude-sonnet-4-6' } }]))
      .to.throw(ConfigError, 'no target serves');
  });

  it('refuses a cloud target in a chat-completions group', () => {
    const family = { id: 'fam-5', upstreamModel: 'fam-large', pricing: { inputPerMillion: 1, outputPerMillion: 2 } };
    const group = { id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', targets: [{ id: 'x', provider: 'foundry', url: 'https://r/anthropic', modelIds: { 'fam-5': 'd' } }] } };
    expect(() => parseConfig({ ...shipped, models: [...shipped.models, family], keyGroups: [group] }, {})).to.throw(ConfigError, 'put it in a native group');
  });
});
