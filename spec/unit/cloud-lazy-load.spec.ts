/**
 * A gateway without cloud targets loads none of the clouds' libraries (start time and memory as
 * before); a Foundry target with an API key loads no @azure/identity either. Run in a child process:
 * the test process itself may have loaded them for other specs.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

const DIST = path.resolve(__dirname, '..', '..');

/** The cloud libraries loaded after a gateway starts on `targets` (in a fresh process). */
function cloudModulesLoaded(targets: object[]): string[] {
  const script = `
    const { parseConfig } = require(${JSON.stringify(path.join(DIST, 'lib/config'))});
    const { startGateway } = require(${JSON.stringify(path.join(DIST, 'lib/server'))});
    const shipped = require(${JSON.stringify(path.join(DIST, '..', 'config.json'))});
    const silent = { error() {}, warn() {}, info() {}, debug() {}, child() { return silent; } };
    process.env.LAZY_KEY = 'k';
    const config = parseConfig({ ...shipped, upstream: { targets: ${JSON.stringify(targets)} } }, { PORT: '0' });
    startGateway({ config, host: '127.0.0.1', requestScope: false, logger: silent }).then(async (running) => {
      const loaded = Object.keys(require.cache).filter((file) => /node_modules[\\\\/](@azure[\\\\/]identity|@aws-sdk|@smithy|google-auth-library)[\\\\/]/.test(file));
      process.stdout.write(JSON.stringify([...new Set(loaded.map((file) => file.split(/node_modules[\\\\/]/).pop().split(/[\\\\/]/).slice(0, 2).join('/')))]));
      await running.close();
      process.exit(0);
    });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 }));
}

describe('cloud libraries load only when configured', function () {
  this.timeout(30_000);
  it('loads none for first-party targets', () => {
    expect(cloudModulesLoaded([{ id: 'a', url: 'http://127.0.0.1:1', apiKeyEnv: 'LAZY_KEY' }, { id: 'b', url: 'http://127.0.0.1:2', apiKeyEnv: 'LAZY_KEY' }])).to.deep.equal([]);
  });
  it('loads none for a Foundry target with an API key', () => {
    const modelIds = Object.fromEntries(require('../../../config.json').models.map((model: { id: string }) => [model.id, `d-${model.id}`]));
    expect(cloudModulesLoaded([{ id: 'f', provider: 'foundry', url: 'http://127.0.0.1:1/anthropic', apiKeyEnv: 'LAZY_KEY', modelIds }])).to.deep.equal([]);
  });
});
