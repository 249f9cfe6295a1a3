/**
 * Config that means what it says: every field docs/operations.md gives a default has it. A file with
 * `upstream` and `keys` only gets the shipped catalogue and aliases; `modelOverrides` changes some
 * models' settings by id; `models` is the whole catalogue, as it says.
 */
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');
const KEY = { id: 'team', key: 'sk-cs4-config-defaults-01' };

describe('config defaults: the shipped catalogue', () => {
  it('starts a file with upstream and keys only on the shipped catalogue and aliases', () => {
    const config = parseConfig({ upstream: { url: 'https://up.example' }, keys: [KEY] }, {});
    expect(config.models).to.deep.equal(shipped.models);
    expect(config.aliases).to.deep.equal(shipped.aliases);
    expect(config.keyGroups[0].models).to.deep.equal(shipped.models.map((model: { id: string }) => model.id));
  });

  it('takes an empty file: no upstream (the simulated one), the shipped catalogue, the documented defaults', () => {
    const config = parseConfig({}, {});
    expect(config.upstream.url).to.equal(null);
    expect(config.upstream.targets).to.deep.equal([]);
    expect(config.upstream.timeoutMs).to.equal(600_000);
    expect(config.models).to.have.length(shipped.models.length);
    expect(config.shutdownGraceMs).to.equal(25_000);
    expect(config.shutdownDelayMs).to.equal(5000);
  });

  it('merges modelOverrides by id: the fields given replace the shipped ones, the others stay; a new id is added', () => {
    const pricing = { inputPerMillion: 4, outputPerMillion: 20 };
    const config = parseConfig({
      keys: [KEY],
      modelOverrides: [
        { id: 'model-sonnet-4.6', pricing, displayName: 'Sonnet (team price)' },
        { id: 'model-house-1', upstreamModel: 'house-1', pricing },
      ],
    }, {});
    const sonnet = config.models.find((model) => model.id === 'model-sonnet-4.6')!;
    const before = shipped.models.find((model: { id: string }) => model.id === 'model-sonnet-4.6');
    expect(sonnet).to.deep.equal({ ...before, pricing, displayName: 'Sonnet (team price)' });
    expect(config.models.map((model) => model.id)).to.deep.equal([...shipped.models.map((model: { id: string }) => model.id), 'model-house-1']);
    expect(config.aliases).to.deep.equal(shipped.aliases);
  });

  it('refuses a new model in modelOverrides without upstreamModel and pricing, naming it', () => {
    expect(() => parseConfig({ modelOverrides: [{ id: 'model-house-1', displayName: 'x' }] }, {}))
      .to.throw(/modelOverrides: "model-house-1" is not in the catalogue, so it needs "upstreamModel" and "pricing"/);
    expect(() => parseConfig({ modelOverrides: [{ id: 'model-opus-5', displayName: 'a' }, { id: 'model-opus-5', displayName: 'b' }] }, {}))
      .to.throw(/modelOverrides: duplicate id "model-opus-5"/);
  });

  it('takes `models` as the whole catalogue, without the shipped aliases unless listed', () => {
    const models = [{ id: 'model-a', upstreamModel: 'up-a', pricing: { inputPerMillion: 1, outputPerMillion: 2 } }];
    const config = parseConfig({ models }, {});
    expect(config.models).to.deep.equal(models);
    expect(config.aliases).to.deep.equal({});
    expect(() => parseConfig({ models: [{ id: 'model-a' }] }, {})).to.throw(/models\.0: must have required property 'upstreamModel'/);
  });
});
