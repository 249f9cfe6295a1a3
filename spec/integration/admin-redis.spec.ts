/**
 * Admin changes through one instance hold on the next API request of another instance sharing Redis.
 * Uses the test run's Redis (spec/setup.ts): fails (never skips) without it.
 */
import { expect } from 'chai';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { admin, ADMIN_TOKEN, sendMessage } from '../helpers/admin';

describe('admin API across two instances sharing Redis', () => {
  const prefix = uniqueRedisPrefix('admin');
  let first: TestGateway;
  let second: TestGateway;

  before(async () => {
    first = await startTestGateway({ env: { ADMIN_TOKEN }, store: await connectTestRedisStore(prefix) });
    second = await startTestGateway({ env: { ADMIN_TOKEN }, store: await connectTestRedisStore(prefix) });
  });

  after(async () => {
    await first?.close();
    await second?.close();
    await deleteRedisPrefix(prefix);
  });

  it('a key created, changed, rotated and revoked through one instance is treated so by the other at once', async () => {
    const created = await admin(first, 'POST', '/keys', { name: 'Shared', allowedModels: ['model-haiku-4.5'] });
    expect(created.status).to.equal(201);
    const { key, secret } = created.body;
    expect(first.gateway.store.kind).to.equal('redis');
    expect(await sendMessage(second, secret, 'haiku')).to.equal(200);
    expect(await sendMessage(second, secret, 'model-sonnet-4.6')).to.equal(403);
    expect((await admin(second, 'GET', `/keys/${key.id}`)).body).to.deep.include({ name: 'Shared', allowedModels: ['model-haiku-4.5'] });

    await admin(first, 'PATCH', `/keys/${key.id}`, { allowedModels: null, name: 'Shared, all models' });
    expect(await sendMessage(second, secret, 'model-sonnet-4.6')).to.equal(200);
    expect((await admin(second, 'GET', '/keys')).body.data.find((k: any) => k.id === key.id).name).to.equal('Shared, all models');

    const rotated = await admin(second, 'POST', `/keys/${key.id}/rotate`, { gracePeriodSeconds: 0 });
    expect(await sendMessage(first, secret)).to.equal(401);
    expect(await sendMessage(first, rotated.body.secret)).to.equal(200);

    await admin(first, 'POST', `/keys/${key.id}/revoke`);
    expect(await sendMessage(second, rotated.body.secret)).to.equal(401);
    expect(await sendMessage(second, KEYS.all)).to.equal(200);
    expect((await admin(second, 'GET', `/keys/${key.id}`)).body.status).to.equal('revoked');
  });

  it('usage settled through one instance is reported by the other', async () => {
    expect(await sendMessage(first, KEYS.haikuOnly, 'haiku')).to.equal(200);
    let usage: any;
    for (let attempt = 0; attempt < 40; attempt++) {
      usage = (await admin(second, 'GET', '/keys/team-haiku/usage')).body;
      if (usage.totals.requests > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(usage.models.map((row: any) => [row.model, row.requests, row.inputTokens, row.outputTokens])).to.deep.equal([['model-haiku-4.5', 1, 10, 5]]);
    const listed = (await admin(second, 'GET', '/keys')).body.data.find((k: any) => k.id === 'team-haiku');
    expect(listed.spend.credits).to.be.closeTo((10 * 1 + 5 * 5) / 1e6, 1e-12);
  });
});
