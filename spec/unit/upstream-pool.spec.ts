import { expect } from 'chai';
import type { KeyGroupConfig } from '../../lib/key-groups';
import { createUpstreamClient, createUpstreamPool } from '../../lib/upstream';

/** A native key group at `url` whose credential is in env variable `apiKeyEnv`. */
function nativeGroup(url: string | null, apiKeyEnv: string): KeyGroupConfig {
  return { id: 'g', keyPrefix: 'sk-g-', models: [], upstream: { kind: 'native', url, apiKeyEnv, timeoutMs: 1000 }, reverseTranslation: false };
}

describe('upstream pool', () => {
  const defaultClient = createUpstreamClient({ url: 'http://upstream.test', apiKey: 'top-secret', timeoutMs: 1000 });
  const pool = createUpstreamPool({
    defaultClient, defaultUrl: 'http://upstream.test', defaultApiKeyEnv: 'TOP_KEY', env: { TOP_KEY: 'top-secret', OWN_KEY: 'own-secret' },
  });
  after(() => pool.destroy());

  it('shares the default client with a native group at the same URL and credential', () => {
    expect(pool.forGroup(nativeGroup('http://upstream.test', 'TOP_KEY'))).to.equal(defaultClient);
    expect(pool.forGroup(nativeGroup(null, 'TOP_KEY'))).to.equal(defaultClient);
  });

  it('gives a native group at the top-level URL with its own apiKeyEnv a client that sends its own credential', () => {
    for (const url of ['http://upstream.test', null]) {
      const client = pool.forGroup(nativeGroup(url, 'OWN_KEY'));
      expect(client).to.not.equal(defaultClient);
      expect(client.pickCredential().headers).to.deep.equal({ 'x-api-key': 'own-secret' });
      expect(client.url.origin).to.equal('http://upstream.test');
    }
  });
});
