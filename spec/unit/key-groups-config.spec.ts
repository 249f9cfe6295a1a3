/** keyGroups in config.json: resolution of the basic group and the validation messages. */
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../lib/config';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');
const family = { id: 'fam-5', upstreamModel: 'fam-large', pricing: { inputPerMillion: 1, outputPerMillion: 2 } };
const chatGroup = { id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', url: 'http://127.0.0.1:1/' } };

function parse(overrides: Record<string, unknown>) {
  return parseConfig({ ...shipped, models: [...shipped.models, family], ...overrides }, {});
}

describe('key groups config', () => {
  it('derives the basic group: sk-cs4-, native, the top-level upstream, every model no group claims', () => {
    const config = parse({ keyGroups: [chatGroup] });
    expect(config.keyGroups.map((g) => g.id)).to.deep.equal(['default', 'family']);
    expect(config.keyGroups[0]).to.deep.include({ keyPrefix: 'sk-cs4-', reverseTranslation: false });
    expect(config.keyGroups[0].models).to.deep.equal(shipped.models.map((m: { id: string }) => m.id));
    expect(config.keyGroups[0].upstream).to.deep.include({ kind: 'native', url: null, apiKeyEnv: 'UPSTREAM_API_KEY' });
    expect(config.keyGroups[1].upstream).to.deep.equal({ kind: 'chat-completions', url: 'http://127.0.0.1:1', apiKeyEnv: 'FAMILY_API_KEY', timeoutMs: 600000 });
  });

  it('is the shipped single-group setup when keyGroups is absent', () => {
    const config = parseConfig(shipped, {});
    expect(config.keyGroups).to.have.length(1);
    expect(config.keyGroups[0].models).to.have.length(8);
  });

  it('gives config keys the group of their prefix', () => {
    const config = parse({ keyGroups: [chatGroup], keys: [{ id: 'a', key: 'sk-fam-0123456789ab' }, { id: 'b', key: 'sk-cs4-0123456789ab' }, { id: 'c', keySha256: 'a'.repeat(64), keyGroup: 'family' }] });
    expect(config.keys.map((k) => k.keyGroup)).to.deep.equal(['family', 'default', 'family']);
  });

  const invalid: Array<[string, Record<string, unknown>, string]> = [
    ['a model no group holds', { models: [...shipped.models, family], keyGroups: [{ id: 'default', models: ['model-opus-5'] }, chatGroup] }, 'belongs to no key group'],
    ['a model in two groups', { keyGroups: [chatGroup, { ...chatGroup, id: 'other', keyPrefix: 'sk-oth-' }] }, 'already in group "family"'],
    ['an unknown model', { keyGroups: [{ ...chatGroup, models: ['nope'] }] }, '"nope" is not a catalogue model id'],
    ['a chat-completions group without a URL', { keyGroups: [{ ...chatGroup, upstream: { kind: 'chat-completions' } }] }, 'needs its upstream URL'],
    ['overlapping prefixes', { keyGroups: [{ ...chatGroup, keyPrefix: 'sk-cs4-x' }] }, 'also matches the keys'],
    ['a basic group with another prefix', { keyGroups: [{ id: 'default', keyPrefix: 'sk-zzz-' }] }, 'uses the prefix "sk-cs4-"'],
    ['reverse translation on a native group', { keyGroups: [{ ...chatGroup, upstream: { kind: 'native' }, reverseTranslation: true }] }, 'applies to chat-completions groups only'],
    ['a key of no group', { keyGroups: [chatGroup], keys: [{ id: 'a', key: 'sk-xyz-0123456789ab' }] }, 'must start with a key group prefix'],
    ['a key whose group contradicts its prefix', { keyGroups: [chatGroup], keys: [{ id: 'a', key: 'sk-fam-0123456789ab', keyGroup: 'default' }] }, 'does not match'],
    ['a key allowed a model of another group', { keyGroups: [chatGroup], keys: [{ id: 'a', key: 'sk-fam-0123456789ab', allowedModels: ['model-opus-5'] }] }, 'not in the catalogue of key group "family"'],
    ['an unknown field', { keyGroups: [{ ...chatGroup, colour: 'red' }] }, 'unknown field "colour"'],
  ];
  for (const [what, overrides, message] of invalid) {
    it(`refuses ${what}`, () => {
      expect(() => parse(overrides)).to.throw(ConfigError, message);
    });
  }

  it('reads METRICS_TOKEN from the environment', () => {
    expect(parseConfig(shipped, { METRICS_TOKEN: 't0ken' }).metricsToken).to.equal('t0ken');
    expect(parseConfig(shipped, {}).metricsToken).to.equal(null);
  });
});
