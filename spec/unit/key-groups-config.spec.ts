/** keyGroups in config.json: resolution of the basic group and the validation messages. */
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../lib/config';
import { checkUpstreamCredentials } from '../../lib/gateway';

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
    expect(config.keyGroups[1].upstream).to.deep.include({ kind: 'chat-completions', url: 'http://127.0.0.1:1', apiKeyEnv: 'FAMILY_API_KEY', timeoutMs: 600000 });
    expect(config.keyGroups[1].upstream.targets).to.deep.equal([
      { id: 'default', url: 'http://127.0.0.1:1', apiKeyEnvs: ['FAMILY_API_KEY'], weight: 1, models: null, credentialRequired: false, provider: 'anthropic', modelIds: null, priceMultiplier: 1 },
    ]);
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

  describe('upstream targets', () => {
    const targets = [
      { id: 'primary', url: 'http://127.0.0.1:1/', apiKeyEnv: 'UPSTREAM_API_KEY', weight: 3 },
      { id: 'backup', url: 'http://127.0.0.1:2', apiKeyEnv: 'UPSTREAM_API_KEY_2', models: ['model-haiku-4.5'] },
    ];

    it('resolves a targets list: weights, models, the first target as upstream.url', () => {
      const config = parseConfig({ ...shipped, upstream: { targets } }, {});
      expect(config.upstream.url).to.equal('http://127.0.0.1:1');
      expect(config.upstream.targets).to.deep.equal([
        { id: 'primary', url: 'http://127.0.0.1:1', apiKeyEnvs: ['UPSTREAM_API_KEY'], weight: 3, models: null, credentialRequired: true, provider: 'anthropic', modelIds: null, priceMultiplier: 1 },
        { id: 'backup', url: 'http://127.0.0.1:2', apiKeyEnvs: ['UPSTREAM_API_KEY_2'], weight: 1, models: ['model-haiku-4.5'], credentialRequired: true, provider: 'anthropic', modelIds: null, priceMultiplier: 1 },
      ]);
      expect(config.keyGroups[0].upstream.targets).to.equal(config.upstream.targets);
    });

    it('keeps the single url / apiKeyEnv form as one target', () => {
      const config = parseConfig({ ...shipped, upstream: { url: 'http://127.0.0.1:1', apiKeyEnv: ['A_KEY', 'B_KEY'] } }, {});
      expect(config.upstream.targets).to.deep.equal([{ id: 'default', url: 'http://127.0.0.1:1', apiKeyEnvs: ['A_KEY', 'B_KEY'], weight: 1, models: null, credentialRequired: false, provider: 'anthropic', modelIds: null, priceMultiplier: 1 }]);
      expect(parseConfig({ ...shipped, upstream: {} }, {}).upstream.targets).to.deep.equal([]);
    });

    it('gives a group with its own credential on the top-level URL a target of its own', () => {
      const config = parseConfig({
        ...shipped, upstream: { url: 'http://127.0.0.1:1', apiKeyEnv: 'UPSTREAM_API_KEY' },
        keyGroups: [{ id: 'default', upstream: { url: 'http://127.0.0.1:1', apiKeyEnv: 'TEAM_KEY' } }],
      }, {});
      expect(config.keyGroups[0].upstream.targets[0].apiKeyEnvs).to.deep.equal(['TEAM_KEY']);
    });

    for (const [name, upstream, message] of [
      ['no target serves a model', { targets: [{ ...targets[1] }] }, 'upstream.targets: no target serves "model-opus-5" (key group "default"): add it to a target\'s "models"'],
      ['targets beside url', { url: 'http://127.0.0.1:1', targets }, 'give either "targets" or "url" / "apiKeyEnv"'],
      ['a duplicate target id', { targets: [targets[0], targets[0]] }, 'upstream.targets.1.id: duplicate id "primary"'],
      ['an unknown model', { targets: [targets[0], { ...targets[1], models: ['nope'] }] }, 'upstream.targets.1.models: "nope" is not a catalogue model id'],
      ['a target without url', { targets: [{ id: 'x' }] }, 'upstream.targets.0.url: a first-party target needs its "url"'],
    ] as const) {
      it(`refuses ${name}, saying how to fix it`, () => {
        expect(() => parseConfig({ ...shipped, upstream }, {})).to.throw(ConfigError, message);
      });
    }

    it('refuses UPSTREAM_URL beside targets', () => {
      expect(() => parseConfig({ ...shipped, upstream: { targets } }, { UPSTREAM_URL: 'http://127.0.0.1:3' })).to.throw(ConfigError, 'unset it, or drop "targets"');
    });

    it('refuses to start when a target\'s credential env variable is not set', () => {
      const config = parseConfig({ ...shipped, upstream: { targets } }, {});
      expect(() => checkUpstreamCredentials(config, { UPSTREAM_API_KEY: 'a' }))
        .to.throw(ConfigError, 'target "backup" reads its credential from env UPSTREAM_API_KEY_2, which is not set: set it, or remove the target');
      expect(() => checkUpstreamCredentials(config, { UPSTREAM_API_KEY: 'a', UPSTREAM_API_KEY_2: 'b' })).to.not.throw();
      // The single form sends no credential when its variable is unset (a local upstream may need none).
      expect(() => checkUpstreamCredentials(parseConfig({ ...shipped, upstream: { url: 'http://127.0.0.1:1' } }, {}), {})).to.not.throw();
    });
  });
});
