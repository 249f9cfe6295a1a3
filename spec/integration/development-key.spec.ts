/**
 * The development key across instances and once real keys exist (lib/keys/development-key.ts): gateways
 * started by `node dist/lib/server.js` with no key on one Redis share the first one's key; a key made
 * with the CLI, or configured, retires it with a log line.
 */
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { DEVELOPMENT_KEY_RETIRED } from '../../lib/keys/development-key';
import { startGateway } from '../../lib/server';
import { MemoryStore } from '../../lib/store/memory-store';
import { createCapturingLogger, KEYS } from '../helpers/gateway';
import { runKeysProcess, startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';

const ask = async (url: string, key: string) => (await fetch(`${url}/v1/models`, { headers: { 'x-api-key': key } })).status;

/** The development key a gateway process printed (just after its listening line), or undefined. */
async function printedKey(gateway: GatewayProcess): Promise<string | undefined> {
  const find = () => /\n {4}(sk-\S+)\n/.exec(gateway.output())?.[1];
  for (let i = 0; i < 40 && !find(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  return find();
}

describe('development key across instances and once real keys exist', function () {
  this.timeout(60_000);

  it('instances on one Redis share the first one\'s key; a key made with the CLI retires it, with a line', async () => {
    const env = { REDIS_URL: testRedisUrl(), REDIS_PREFIX: uniqueRedisPrefix('devkey') };
    const first = await startGatewayProcess(env);
    let second: GatewayProcess | undefined;
    try {
      const key = await printedKey(first);
      expect(key, first.output()).to.match(/^sk-cs4-/);
      second = await startGatewayProcess(env);
      expect(await printedKey(second), second.output()).to.equal(undefined);
      expect(second.output()).to.contain('no development key printed: this store already has a development key');
      expect(await ask(first.url, key!)).to.equal(200);
      expect(await ask(second.url, key!)).to.equal(200);

      const created = await runKeysProcess(['create', '--id', 'team'], env);
      expect(created.status, created.stderr).to.equal(0);
      expect(created.stderr).to.contain(DEVELOPMENT_KEY_RETIRED);
      expect(await ask(first.url, key!)).to.equal(401);
      expect(await ask(second.url, key!)).to.equal(401);
    } finally {
      await Promise.all([first.stop(), second?.stop()]);
      await deleteRedisPrefix(env.REDIS_PREFIX);
    }
  });

  it('a key made with the admin API retires it at once, with a log line', async () => {
    const adminToken = 'admin-token-for-the-development-key-test';
    const config = parseConfig(require('../../../config.json'), { PORT: '0', ADMIN_TOKEN: adminToken });
    const captured = createCapturingLogger();
    const gateway = await startGateway({ config, logger: captured.logger, store: new MemoryStore(), host: '127.0.0.1' });
    try {
      const developmentKey = gateway.developmentKey!;
      expect(await ask(gateway.url, developmentKey)).to.equal(200);
      const created = await fetch(`${gateway.url}/admin/v1/keys`, {
        method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'team' }),
      });
      expect(created.status).to.equal(201);
      const { secret } = (await created.json()) as { secret: string };
      expect(captured.lines.map((line) => line.message)).to.include(DEVELOPMENT_KEY_RETIRED);
      expect(await ask(gateway.url, developmentKey)).to.equal(401);
      expect(await ask(gateway.url, secret)).to.equal(200);
    } finally {
      await gateway.close();
    }
  });

  it('a configured key retires the development key of an earlier start, with a log line', async () => {
    const shipped = parseConfig(require('../../../config.json'), { PORT: '0' });
    const store = new MemoryStore();
    const first = await startGateway({ config: shipped, logger: createCapturingLogger().logger, store, host: '127.0.0.1' });
    const developmentKey = first.developmentKey!;
    expect(await ask(first.url, developmentKey)).to.equal(200);
    await first.close();
    const withKeys = parseConfig({ ...require('../../../config.json'), keys: [{ id: 'team', key: KEYS.all }] }, { PORT: '0' });
    const captured = createCapturingLogger();
    const second = await startGateway({ config: withKeys, logger: captured.logger, store, host: '127.0.0.1' });
    try {
      expect(second.developmentKey).to.equal(undefined);
      expect(captured.lines.map((line) => line.message)).to.include(DEVELOPMENT_KEY_RETIRED);
      expect(await ask(second.url, developmentKey)).to.equal(401);
      expect(await ask(second.url, KEYS.all)).to.equal(200);
    } finally {
      await second.close();
    }
  });
});
