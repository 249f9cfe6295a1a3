import { expect } from 'chai';
import path from 'node:path';
import { ConfigError, defaultConfigFile, loadConfig, parseConfig } from '../../lib/config';

const base = () => ({
  upstream: { url: 'http://127.0.0.1:9', apiKeyEnv: 'UPSTREAM_API_KEY', timeoutMs: 1000 },
  models: [{ id: 'model-a', upstreamModel: 'up-a', pricing: { inputPerMillion: 1, outputPerMillion: 2 } }],
  aliases: { a: 'model-a' },
  keys: [{ id: 'k1', key: 'sk-cs4-abcdefgh12' }],
});

describe('config', () => {
  it('loads the shipped config.json: all eight catalogue models and the three aliases', () => {
    const config = loadConfig(path.resolve(__dirname, '..', '..', '..', 'config.json'), {});
    expect(config.models.map((m) => m.id)).to.deep.equal([
      'model-opus-5', 'model-fable-5', 'model-opus-4.8', 'model-opus-4.7', 'model-opus-4.6', 'model-sonnet-5', 'model-sonnet-4.6', 'model-haiku-4.5',
    ]);
    expect(config.aliases).to.deep.equal({ opus: 'model-opus-4.8', sonnet: 'model-sonnet-4.6', haiku: 'model-haiku-4.5' });
    expect(config.upstream.url).to.equal(null);
    expect(config.port).to.equal(8080);
  });

  it('applies defaults and env overrides (PORT, UPSTREAM_URL, REDIS_URL, LOG_LEVEL)', () => {
    const config = parseConfig(base(), { PORT: '9999', UPSTREAM_URL: 'https://up.example/', REDIS_URL: 'redis://r:6379', LOG_LEVEL: 'warn' });
    expect(config.port).to.equal(9999);
    expect(config.upstream.url).to.equal('https://up.example');
    expect(config.redisUrl).to.equal('redis://r:6379');
    expect(config.logLevel).to.equal('warn');
    expect(config.defaults.maxTokens).to.equal(4096);
    expect(config.limits.bodyBytes).to.equal(32 * 1024 * 1024);
    expect(Object.isFrozen(config.models[0])).to.equal(true);
  });

  const invalid: Array<[string, (c: any) => void, RegExp]> = [
    ['an unknown top-level field', (c) => (c.extra = 1), /unknown field "extra"/],
    ['a model without pricing', (c) => delete c.models[0].pricing, /models\.0: must have required property 'pricing'/],
    ['a negative price', (c) => (c.models[0].pricing.inputPerMillion = -1), /models\.0\.pricing\.inputPerMillion/],
    ['an alias to a model outside the catalogue', (c) => (c.aliases.b = 'model-b'), /aliases\.b: "model-b" is not a catalogue model id/],
    ['a key with both key and keySha256', (c) => (c.keys[0].keySha256 = 'a'.repeat(64)), /keys\.0: give exactly one of "key" and "keySha256"/],
    ['a key without the sk-cs4- prefix', (c) => (c.keys[0].key = 'sk-other-abcdefgh'), /keys\.0\.key/],
    ['allowedModels naming an unknown model', (c) => (c.keys[0].allowedModels = ['nope']), /keys\.0\.allowedModels: "nope"/],
    ['duplicate key ids', (c) => c.keys.push({ id: 'k1', key: 'sk-cs4-zzzzzzzz99' }), /keys\.1\.id: duplicate id "k1"/],
    ['an upstream URL that is not http(s)', (c) => (c.upstream.url = 'ftp://x'), /upstream\.url/],
    ['a thinking budget under the native minimum', (c) => (c.responses = { thinkingBudgets: { low: 512 } }), /responses\.thinkingBudgets\.low: must be >= 1024/],
    ['an unknown responses field', (c) => (c.responses = { ttl: 5 }), /responses: unknown field "ttl"/],
  ];
  for (const [name, mutate, message] of invalid) {
    it(`refuses ${name}, naming the field`, () => {
      const raw = base();
      mutate(raw);
      expect(() => parseConfig(raw, {})).to.throw(ConfigError, message);
    });
  }

  it('gives the Responses route its defaults, and merges configured thinking budgets over them', () => {
    expect(parseConfig(base(), {}).responses).to.deep.equal({
      thinkingBudgets: { low: 2048, medium: 8192, high: 16384, xhigh: 32768, max: 65536 }, storeTtlMs: 86_400_000, maxStoredBytesPerKey: 64 * 1024 * 1024,
    });
    const raw: any = base();
    raw.responses = { thinkingBudgets: { high: 24000, max: 60000 }, storeTtlMs: 3_600_000 };
    expect(parseConfig(raw, {}).responses).to.deep.equal({
      thinkingBudgets: { low: 2048, medium: 8192, high: 24000, xhigh: 32768, max: 60000 }, storeTtlMs: 3_600_000, maxStoredBytesPerKey: 64 * 1024 * 1024,
    });
  });

  it('refuses a PORT that is not a port number', () => {
    expect(() => parseConfig(base(), { PORT: 'eighty' })).to.throw(ConfigError, /PORT/);
  });

  it('reports a missing or unparsable file with its path', () => {
    expect(() => loadConfig('/nonexistent/config.json', {})).to.throw(ConfigError, /cannot read configuration file \/nonexistent\/config.json/);
    expect(() => loadConfig(__filename, {})).to.throw(ConfigError, /is not valid JSON/);
  });

  it('reads the shipped config.json when no file is named (npm start), or GATEWAY_CONFIG', () => {
    const shipped = path.resolve(__dirname, '..', '..', '..', 'config.json');
    expect(defaultConfigFile({})).to.equal(shipped);
    expect(loadConfig(undefined, {}).models.map((model) => model.id)).to.include('model-sonnet-4.6');
    expect(defaultConfigFile({ GATEWAY_CONFIG: '/etc/gateway.json' })).to.equal('/etc/gateway.json');
  });
});
