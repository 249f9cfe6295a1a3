/**
 * Teams through the admin API (issue 44), on the memory store and on Redis (two instances sharing it):
 * an organisation admin makes a team (`POST /admin/v1/teams`), a member's key under it is held by the
 * team's cap on the other instance within about a second of each change (`PATCH`), and by a member's
 * own cap; ids in use and teams config.json declares are refused (409), unknown ones 404; every change
 * is in the audit log with its fields before and after.
 */
import { expect } from 'chai';
import { ADMIN_TOKEN, admin } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import type { GatewayStore } from '../../lib/store/types';

const DECLARED = { id: 'declared', name: 'Declared', monthlyCreditCap: 100 };

/** A native request through `gateway` with `secret`: its status and `x-gateway-limit`. */
async function send(gateway: TestGateway, secret: string): Promise<{ status: number; limit: string | null }> {
  const response = await fetch(`${gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'model-haiku-4.5', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  await response.arrayBuffer();
  return { status: response.status, limit: response.headers.get('x-gateway-limit') };
}

/** `probe()` again every 50 ms until `done` says yes (at most `ms`); the last answer. */
async function waitFor<T>(probe: () => Promise<T>, done: (value: T) => boolean, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await probe();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await probe();
  }
  return value;
}

for (const kind of ['memory', 'redis'] as const) {
  describe(`admin API teams (${kind} store${kind === 'redis' ? ', two instances' : ''})`, function () {
    this.timeout(60_000);
    const prefix = uniqueRedisPrefix('admin-teams');
    let gateways: TestGateway[] = [];

    beforeEach(async () => {
      for (let i = 0; i < (kind === 'redis' ? 2 : 1); i++) {
        const store = kind === 'redis' ? await connectTestRedisStore(prefix) : undefined;
        gateways.push(await startTestGateway({ store: store as GatewayStore | undefined, env: { ADMIN_TOKEN }, overrides: { teams: [DECLARED] } }));
      }
    });
    afterEach(async () => {
      for (const gateway of gateways) await gateway.close();
      gateways = [];
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('an org admin makes a team; a member key under it is held by its cap, then by a member\'s own cap, on every instance', async () => {
      const [first, last] = [gateways[0], gateways[gateways.length - 1]];
      const created = await admin(first, 'POST', '/teams', { id: 'research', name: 'Research', monthlyCreditCap: 1000, allowedModels: ['model-haiku-4.5'] });
      expect(created.status).to.equal(201);
      expect(created.body).to.deep.equal({
        id: 'research', name: 'Research', oidcGroups: [], adminGroups: [], monthlyCreditCap: 1000, memberMonthlyCreditCap: null,
        allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: null, declaredIn: 'admin-api', memberCaps: {},
      });
      const listed = await admin(first, 'GET', '/teams');
      expect(listed.body.teams.map((team: any) => [team.id, team.declaredIn, team.monthSpend])).to.deep.equal([['declared', 'config.json', 0], ['research', 'admin-api', 0]]);

      // The other instance knows the team within about a second: a key can be put in it there.
      const key = await waitFor(() => admin(last, 'POST', '/keys', { name: 'erin laptop', team: 'research', owner: 'erin', rateLimitPerMinute: 100000 }), (reply) => reply.status === 201, 3000);
      expect(key.status).to.equal(201);
      expect(key.body.key.allowedModels).to.deep.equal(['model-haiku-4.5']);
      expect(await send(last, key.body.secret)).to.deep.equal({ status: 200, limit: null });

      // The cap lowered on one instance holds the key on the other within about a second.
      const started = Date.now();
      expect((await admin(first, 'PATCH', '/teams/research', { monthlyCreditCap: 0 })).status).to.equal(200);
      expect(await waitFor(() => send(last, key.body.secret), (reply) => reply.status === 402, 3000)).to.deep.equal({ status: 402, limit: 'team' });
      expect(Date.now() - started).to.be.below(3000);

      // A member's own cap under the team's default, and back.
      expect((await admin(first, 'PATCH', '/teams/research', { monthlyCreditCap: 1000, memberMonthlyCreditCap: 500 })).status).to.equal(200);
      await waitFor(() => send(last, key.body.secret), (reply) => reply.status === 200, 3000);
      const own = await admin(first, 'PATCH', '/teams/research/members/erin', { monthlyCreditCap: 0 });
      expect(own.body).to.deep.equal({ team: 'research', subject: 'erin', monthlyCreditCap: 0, effectiveMonthlyCreditCap: 0 });
      expect(await waitFor(() => send(last, key.body.secret), (reply) => reply.status === 402, 3000)).to.deep.equal({ status: 402, limit: 'member' });
      expect((await admin(first, 'GET', '/teams')).body.teams[1].memberCaps).to.deep.equal({ erin: 0 });
      const above = await admin(first, 'PATCH', '/teams/research/members/erin', { monthlyCreditCap: 1001 });
      expect(above.status).to.equal(403);
      expect(above.body.error.message).to.include('monthlyCreditCap').and.to.include('1000');
      expect((await admin(first, 'PATCH', '/teams/research/members/erin', { monthlyCreditCap: null })).body.effectiveMonthlyCreditCap).to.equal(500);
      expect(await waitFor(() => send(last, key.body.secret), (reply) => reply.status === 200, 3000)).to.deep.equal({ status: 200, limit: null });

      // Each change is in the audit log, its fields before and after.
      const audit = (await admin(first, 'GET', '/audit?objectType=team')).body.data.filter((entry: any) => entry.object.id === 'research');
      expect(audit.map((entry: any) => entry.action)).to.deep.equal(['team.create', 'team.update', 'team.update', 'team.member.cap', 'team.member.cap']);
      expect(audit.every((entry: any) => entry.actor === 'admin-token' && entry.team === 'research')).to.equal(true);
      expect(audit[0].after).to.deep.include({ id: 'research', monthlyCreditCap: 1000 });
      expect([audit[1].before, audit[1].after]).to.deep.equal([{ monthlyCreditCap: 1000 }, { monthlyCreditCap: 0 }]);
      expect([audit[2].before, audit[2].after]).to.deep.equal([{ monthlyCreditCap: 0, memberMonthlyCreditCap: null }, { monthlyCreditCap: 1000, memberMonthlyCreditCap: 500 }]);
      expect([audit[3].before, audit[3].after]).to.deep.equal([{ member: 'erin', monthlyCreditCap: null }, { member: 'erin', monthlyCreditCap: 0 }]);
      expect([audit[4].before, audit[4].after]).to.deep.equal([{ member: 'erin', monthlyCreditCap: 0 }, { member: 'erin', monthlyCreditCap: null }]);
    });

    it('refuses an id in use (409), a team config.json declares (409 naming it), an unknown team (404) and a bad body (400)', async () => {
      const [first, last] = [gateways[0], gateways[gateways.length - 1]];
      expect((await admin(first, 'POST', '/teams', { id: 'web' })).status).to.equal(201);
      const again = await admin(last, 'POST', '/teams', { id: 'web', name: 'Web again' });
      expect(again.status).to.equal(409);
      expect(again.body.error.message).to.include('already exists');
      for (const [method, path, body] of [['POST', '/teams', { id: 'declared' }], ['PATCH', '/teams/declared', { monthlyCreditCap: 1 }]] as const) {
        const refused = await admin(first, method, path, body);
        expect(refused.status, `${method} ${path}`).to.equal(409);
        expect(refused.body.error.message).to.include('config.json');
      }
      expect((await admin(first, 'PATCH', '/teams/nope', { name: 'x' })).status).to.equal(404);
      expect((await admin(first, 'PATCH', '/teams/nope/members/erin', { monthlyCreditCap: 1 })).status).to.equal(404);
      const bad = [
        [{ id: 'has space' }, 'id'], [{ id: 'x', allowedModels: ['no-such-model'] }, 'no-such-model'], [{ id: 'x', monthlyCreditCap: -1 }, 'monthlyCreditCap'], [{ id: 'x', owner: 'y' }, 'owner'],
      ] as const;
      for (const [body, named] of bad) {
        const refused = await admin(first, 'POST', '/teams', body);
        expect(refused.status, JSON.stringify(body)).to.equal(400);
        expect(refused.body.type).to.equal('error');
        expect(refused.body.error.message).to.include(named);
      }
      expect((await admin(first, 'PATCH', '/teams/web', { id: 'other' })).status).to.equal(400);
      expect((await admin(first, 'PATCH', '/teams/web', {})).status).to.equal(400);
      // The file's team stays the file's; the store's as made.
      expect((await admin(first, 'GET', '/teams')).body.teams.map((team: any) => [team.id, team.name, team.declaredIn]))
        .to.deep.equal([['declared', 'Declared', 'config.json'], ['web', 'web', 'admin-api']]);
    });
  });
}
