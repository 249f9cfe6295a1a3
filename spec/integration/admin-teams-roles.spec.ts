/**
 * Teams through the admin API by role (issue 44), signed in through a real OpenID provider, on the
 * memory store and on Redis: an organisation admin makes a team; its admin (by `adminGroups`) lowers
 * its cap, narrows its models, renames it and sets members' caps within its limits, and is refused
 * (403 naming the limit, nothing changed) raising or widening them or changing its groups; a member
 * changes nothing; a team config.json declares is 409; the team's members see it at sign-in; the
 * audit log names who changed what.
 */
import { expect } from 'chai';
import { admin } from '../helpers/admin';
import type { TestGateway } from '../helpers/gateway';
import type { TestOidcProvider } from '../helpers/oidc-provider';
import { asUser, signInAll, startSignInGateway, type TestSession } from '../helpers/people';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import type { GatewayStore } from '../../lib/store/types';

const GROWTH = {
  id: 'growth', name: 'Growth', oidcGroups: ['payments'], adminGroups: ['payments-leads'], monthlyCreditCap: 50, memberMonthlyCreditCap: 10,
  allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'], rateLimitPerMinute: 100,
};

for (const kind of ['memory', 'redis'] as const) {
  describe(`admin API teams by role, signed in (${kind} store)`, function () {
    this.timeout(60_000);
    const prefix = uniqueRedisPrefix('team-roles');
    let provider: TestOidcProvider;
    let gateway: TestGateway;
    const session: Record<string, TestSession> = {};
    const as = (login: string, method: string, path: string, body?: unknown) => asUser(gateway, session[login].cookie, method, path, body, session[login].csrf);

    before(async () => {
      let baseUrl: string;
      ({ provider, gateway, baseUrl } = await startSignInGateway(kind === 'redis' ? await connectTestRedisStore(prefix) as GatewayStore : undefined));
      // Made before anyone signs in: membership and team admins come from the teams at sign-in.
      expect((await admin(gateway, 'POST', '/teams', GROWTH)).status).to.equal(201);
        Object.assign(session, await signInAll(gateway, baseUrl, ['alice', 'bob', 'dana']));
    });

    after(async () => {
      await gateway?.close();
      await provider?.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('its members and admin see the team made through the admin API at sign-in', async () => {
      expect((await as('bob', 'GET', '/me')).body.teams.map((team: any) => [team.id, team.role])).to.deep.equal([['payments', 'member'], ['growth', 'member']]);
      expect((await as('dana', 'GET', '/me')).body.teams.map((team: any) => [team.id, team.role])).to.deep.equal([['payments', 'team-admin'], ['growth', 'team-admin']]);
      const key = await as('bob', 'POST', '/me/keys', { team: 'growth', monthlyCreditCap: 11 });
      expect(key.status).to.equal(403);
      expect(key.body.error.message).to.include('member cap of team "growth" is 10');
    });

    it('the team admin lowers and narrows within the team\'s limits; raising, widening and its groups are refused with 403 naming the limit', async () => {
      for (const change of [{ monthlyCreditCap: 40 }, { memberMonthlyCreditCap: 20 }, { allowedModels: ['model-haiku-4.5'] }, { name: 'Growth team' }, { rateLimitPerMinute: 50 }]) {
        const reply = await as('dana', 'PATCH', '/teams/growth', change);
        expect(reply.status, JSON.stringify(change)).to.equal(200);
        expect(reply.body).to.deep.include(change);
      }
      const refusals: Array<[Record<string, unknown>, string]> = [
        [{ monthlyCreditCap: 41 }, 'monthlyCreditCap'], [{ monthlyCreditCap: null }, 'monthlyCreditCap'],
        [{ memberMonthlyCreditCap: 45 }, 'memberMonthlyCreditCap'], [{ allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'] }, 'allowedModels'],
        [{ allowedModels: null }, 'allowedModels'], [{ rateLimitPerMinute: 51 }, 'rateLimitPerMinute'], [{ adminGroups: [] }, 'adminGroups'],
        [{ oidcGroups: ['payments', 'staff'] }, 'oidcGroups'], [{ name: 'ok', monthlyCreditCap: 1000 }, 'monthlyCreditCap'],
      ];
      for (const [change, limit] of refusals) {
        const reply = await as('dana', 'PATCH', '/teams/growth', change);
        expect(reply.status, JSON.stringify(change)).to.equal(403);
        expect(reply.body.error.type).to.equal('permission_error');
        expect(reply.body.error.message.startsWith(`${limit}:`), reply.body.error.message).to.equal(true);
      }
      // Nothing refused was applied (not clamped, not partly).
      const growth = (await admin(gateway, 'GET', '/teams')).body.teams.find((team: any) => team.id === 'growth');
      expect(growth).to.deep.include({ name: 'Growth team', monthlyCreditCap: 40, memberMonthlyCreditCap: 20, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 50, adminGroups: ['payments-leads'] });
      // The organisation admin raises it again.
      expect((await as('alice', 'PATCH', '/teams/growth', { monthlyCreditCap: 60, allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'] })).status).to.equal(200);
    });

    it('the team admin sets a member\'s own cap up to the member cap; a member changes nothing; a declared team is 409', async () => {
      const over = await as('dana', 'PATCH', '/teams/growth/members/bob', { monthlyCreditCap: 21 });
      expect(over.status).to.equal(403);
      expect(over.body.error.message).to.include('memberMonthlyCreditCap, 20');
      expect((await as('dana', 'PATCH', '/teams/growth/members/bob', { monthlyCreditCap: 5 })).body).to.deep.include({ monthlyCreditCap: 5, effectiveMonthlyCreditCap: 5 });
      // The organisation admin may go up to the team's cap.
      expect((await as('alice', 'PATCH', '/teams/growth/members/bob', { monthlyCreditCap: 60 })).status).to.equal(200);
      expect((await as('alice', 'PATCH', '/teams/growth/members/bob', { monthlyCreditCap: 61 })).status).to.equal(403);
      for (const [method, path, body] of [['PATCH', '/teams/growth', { name: 'mine' }], ['PATCH', '/teams/growth/members/bob', { monthlyCreditCap: 100 }], ['POST', '/teams', { id: 'bobs' }], ['GET', '/teams', undefined]] as const) {
        expect((await as('bob', method, path, body)).status, `${method} ${path}`).to.equal(403);
      }
      expect((await as('dana', 'POST', '/teams', { id: 'danas' })).status).to.equal(403);
      const declared = await as('dana', 'PATCH', '/teams/payments', { monthlyCreditCap: 1 });
      expect(declared.status).to.equal(409);
      expect(declared.body.error.message).to.include('config.json');
    });

    it('the audit log names who changed the team, with the fields before and after', async () => {
      const entries = (await admin(gateway, 'GET', '/audit?objectId=growth')).body.data;
      const byDana = entries.filter((entry: any) => entry.actor?.subject === 'dana');
      expect(byDana.map((entry: any) => entry.action)).to.deep.equal(['team.update', 'team.update', 'team.update', 'team.update', 'team.update', 'team.member.cap']);
      expect([byDana[0].before, byDana[0].after]).to.deep.equal([{ monthlyCreditCap: 50 }, { monthlyCreditCap: 40 }]);
      expect(entries[0]).to.deep.include({ action: 'team.create', actor: 'admin-token', team: 'growth' });
      expect(entries.at(-1)).to.deep.include({ action: 'team.member.cap', before: { member: 'bob', monthlyCreditCap: 5 }, after: { member: 'bob', monthlyCreditCap: 60 } });
    });

    it('the team admin reads their team\'s audit entries through the admin API, but may not verify; a member reads none', async () => {
      const asDana = await as('dana', 'GET', '/audit?objectId=growth');
      expect(asDana.status).to.equal(200);
      expect(asDana.body.data.map((entry: any) => entry.action)).to.include.members(['team.create', 'team.update', 'team.member.cap']);
      expect(asDana.body.data.every((entry: any) => ['growth', 'payments'].includes(entry.team))).to.equal(true);
      expect((await as('dana', 'GET', '/audit/verify')).status).to.equal(403);
      expect((await as('bob', 'GET', '/audit')).status).to.equal(403);
    });
  });
}
