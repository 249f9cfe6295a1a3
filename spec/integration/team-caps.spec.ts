/**
 * Caps at every level under load (issue 44): two members of one team, 40 requests in flight each, over
 * two gateway instances on one Redis (and one instance on the memory store). No member passes its
 * member cap, the team never passes the team cap, every 402 names the cap that stopped it in its
 * message and in `x-gateway-limit`, and the three ledgers settle exactly.
 */
import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { utcMonth } from '../../lib/store/month';
import type { RedisStore } from '../../lib/store/redis-store';
import type { GatewayStore } from '../../lib/store/types';
import { boundInputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { admin, ADMIN_TOKEN, sendMessage } from '../helpers/admin';
import { startGatedUpstream, type GatedUpstream } from '../helpers/gated-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const SECRETS = { alice: 'sk-cs4-test-team-alice-000044', bob: 'sk-cs4-test-team-bob-0000044' };
const BODY = JSON.stringify({ model: 'haiku', max_tokens: 2000, messages: [{ role: 'user', content: 'Summarise the report.' }] });
const PER_MEMBER = 40;

for (const kind of ['memory', 'redis'] as const) {
  describe(`team and member caps with ${PER_MEMBER} requests in flight per member (${kind} store${kind === 'redis' ? ', two instances' : ''})`, function () {
    this.timeout(60_000);
    let gateways: TestGateway[] = [];
    let stores: RedisStore[] = [];
    let upstream: GatedUpstream | undefined;

    afterEach(async () => {
      upstream?.release();
      for (const gw of gateways) await gw.close();
      await upstream?.close();
      for (const store of stores) await deleteRedisPrefix(store.prefix);
      gateways = [];
      stores = [];
    });

    it('no member passes its cap, the team never passes its cap, the 402s name the cap, and the ledgers settle exactly', async () => {
      const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
      const haiku = createCatalogue(config).resolve('haiku')!;
      const inputBound = boundInputTokens(Buffer.byteLength(BODY), config.reservation);
      const worstCase = priceWorstCase(haiku, inputBound, 2000);
      const memberCap = 5.5 * worstCase;
      const teamCap = 8.5 * worstCase;
      // Each reply uses the whole input bound and all of max_tokens (the worst case, or what a cut request allows).
      upstream = await startGatedUpstream({ input_tokens: inputBound, output_tokens: 2000 });
      const overrides = {
        teams: [{ id: 'core', name: 'Core', monthlyCreditCap: teamCap, memberMonthlyCreditCap: memberCap }],
        keys: [
          { id: 'alice-1', key: SECRETS.alice, team: 'core', owner: 'alice', rateLimitPerMinute: 1000 },
          { id: 'bob-1', key: SECRETS.bob, team: 'core', owner: 'bob', rateLimitPerMinute: 1000 },
        ],
      };
      const prefix = uniqueRedisPrefix('team-caps');
      for (let i = 0; i < (kind === 'redis' ? 2 : 1); i++) {
        const store = kind === 'redis' ? await connectTestRedisStore(prefix) : undefined;
        if (store) stores.push(store);
        gateways.push(await startTestGateway({ store: store as GatewayStore | undefined, env: { UPSTREAM_URL: upstream.url }, overrides }));
      }

      const refusals: Array<{ member: string; limit: string | null; message: string }> = [];
      const replies = (['alice', 'bob'] as const).flatMap((member) => Array.from({ length: PER_MEMBER }, (_, i) =>
        fetch(`${gateways[i % gateways.length].url}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': SECRETS[member], 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
          body: BODY,
        }).then(async (res) => {
          const body = await res.json() as { error?: { message: string } };
          if (res.status === 402) refusals.push({ member, limit: res.headers.get('x-gateway-limit'), message: body.error!.message });
          return res.status;
        })));
      // Held at the upstream: at most what the team cap pays (8 whole, one cut to the half worst case left).
      const deadline = Date.now() + 20_000;
      while (refusals.length + upstream.received() < 2 * PER_MEMBER && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(refusals.length + upstream.received()).to.equal(2 * PER_MEMBER);
      expect(upstream.received()).to.equal(9);
      upstream.release();
      const statuses = await Promise.all(replies);
      expect(statuses.filter((status) => status === 200)).to.have.length(9);
      expect(statuses.filter((status) => status === 402)).to.have.length(2 * PER_MEMBER - 9);

      for (const refusal of refusals) {
        expect(refusal.limit).to.be.oneOf(['member', 'team']);
        expect(refusal.message).to.include(`monthly credit cap${refusal.message.includes('reached') ? ' reached for' : ' of'} this ${refusal.limit}`);
      }
      expect(refusals.map((refusal) => refusal.limit), 'both members spent: the team binds one of them').to.include('team');

      const store = gateways[0].gateway.store;
      const month = utcMonth(Date.now());
      let requests = 0;
      for (let i = 0; i < 500 && requests < 9; i++) {
        requests = 0;
        for (const id of ['alice-1', 'bob-1']) for (const row of await store.getUsage(id, month)) requests += row.requests;
        if (requests < 9) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(requests).to.equal(9);
      const alice = await store.getTeamMonthSpend('core', month, 'alice');
      const bob = await store.getTeamMonthSpend('core', month, 'bob');
      const team = await store.getTeamMonthSpend('core', month);
      expect(alice).to.be.at.most(memberCap + 1e-9);
      expect(bob).to.be.at.most(memberCap + 1e-9);
      expect(team).to.be.at.most(teamCap + 1e-9);
      expect(alice, 'the member ledger is the sum of its keys').to.be.closeTo(await store.getMonthSpend('alice-1', month), 1e-9);
      expect(bob).to.be.closeTo(await store.getMonthSpend('bob-1', month), 1e-9);
      expect(team, 'the team ledger is the sum of its members').to.be.closeTo(alice + bob, 1e-9);
      // Every reply cost exactly what it reported: 8 whole ones and the cut one.
      const cut = upstream.maxTokens().find((max) => max !== 2000);
      const realCost = (outputTokens: number) => (inputBound * 1 + outputTokens * 5) / 1e6;
      expect(team).to.be.closeTo(8 * realCost(2000) + (cut === undefined ? realCost(2000) : realCost(cut)), 1e-9);
    });
  });
}

describe('usage by member and team, the teams, and a team cap\'s 402 on the chat route (admin API, memory store)', function () {
  this.timeout(30_000);
  let gw: TestGateway;
  afterEach(async () => gw?.close());

  it('sums usage per team and per member, shows the team with its spend, and the chat 402 names the member cap', async () => {
    const SECRET_CAROL = 'sk-cs4-test-solo-carol-00044';
    gw = await startTestGateway({
      env: { ADMIN_TOKEN },
      overrides: {
        teams: [{ id: 'core', name: 'Core', monthlyCreditCap: 100, memberMonthlyCreditCap: 0.02, allowedModels: ['model-haiku-4.5', 'model-sonnet-4.6'] }],
        keys: [
          { id: 'alice-1', key: SECRETS.alice, team: 'core', owner: 'alice', rateLimitPerMinute: 1000 },
          { id: 'bob-1', key: SECRETS.bob, team: 'core', owner: 'bob', rateLimitPerMinute: 1000, allowedModels: ['model-haiku-4.5', 'model-opus-4.6'] },
          { id: 'carol-1', key: SECRET_CAROL, rateLimitPerMinute: 1000 },
        ],
      },
    });
    expect(await sendMessage(gw, SECRETS.alice)).to.equal(200);
    expect(await sendMessage(gw, SECRETS.alice)).to.equal(200);
    expect(await sendMessage(gw, SECRETS.bob, 'model-haiku-4.5')).to.equal(200);
    expect(await sendMessage(gw, SECRET_CAROL)).to.equal(200);
    // The team's policy: bob's models are within the team's (opus is not).
    expect(await sendMessage(gw, SECRETS.bob, 'model-opus-4.6')).to.equal(403);
    const bob = await admin(gw, 'GET', '/keys/bob-1');
    expect(bob.body).to.deep.include({ team: 'core', owner: 'bob', allowedModels: ['model-haiku-4.5'] });

    const byTeam = await admin(gw, 'GET', '/usage?groupBy=team');
    expect(byTeam.status).to.equal(200);
    const core = byTeam.body.rows.find((row: any) => row.teamId === 'core');
    const none = byTeam.body.rows.find((row: any) => row.teamId === null);
    expect(core).to.deep.include({ teamName: 'Core', monthlyCreditCap: 100, memberMonthlyCreditCap: 0.02, members: 2, keys: 2, requests: 3 });
    expect(core.monthSpend).to.be.closeTo(core.credits, 1e-9);
    expect(none).to.deep.include({ members: 0, keys: 1, requests: 1, monthSpend: null });
    expect(core.credits + none.credits).to.be.closeTo(byTeam.body.totals.credits, 1e-9);

    const byUser = await admin(gw, 'GET', '/usage?groupBy=user');
    const alice = byUser.body.rows.find((row: any) => row.userId === 'alice');
    expect(alice).to.deep.include({ teamId: 'core', keys: 1, requests: 2, memberMonthlyCreditCap: 0.02 });
    expect(alice.monthSpend).to.be.closeTo(alice.credits, 1e-9);
    expect(byUser.body.rows.map((row: any) => row.userId).sort()).to.deep.equal(['alice', 'bob', null].sort());

    const teams = await admin(gw, 'GET', '/teams');
    expect(teams.body.teams).to.have.length(1);
    expect(teams.body.teams[0]).to.deep.include({ id: 'core', declaredIn: 'config.json', monthlyCreditCap: 100 });
    expect(teams.body.teams[0].monthSpend).to.be.closeTo(core.credits, 1e-9);

    // A request whose minimal reply does not fit alice's member cap (0.02 credits): a 402 in the chat shape.
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(20_000) }] }),
    });
    const body = await res.json() as { error: { code: string; message: string } };
    expect(res.status).to.equal(402);
    expect(res.headers.get('x-gateway-limit')).to.equal('member');
    expect(body.error.code).to.equal('insufficient_quota');
    expect(body.error.message).to.match(/monthly credit cap (reached for|of) this member/);
    expect(await sendMessage(gw, SECRET_CAROL)).to.equal(200);

    // The admin API puts a key in a team within its policy: models within the team's, cap at most the member cap.
    const created = await admin(gw, 'POST', '/keys', { name: 'Dave', team: 'core', owner: 'dave', allowedModels: ['model-haiku-4.5', 'model-opus-4.6'], monthlyCreditCap: 5 });
    expect(created.status).to.equal(201);
    expect(created.body.key).to.deep.include({ team: 'core', owner: 'dave', allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 0.02 });
    expect((await admin(gw, 'POST', '/keys', { name: 'Eve', team: 'nope' })).body.error.message).to.match(/^team: "nope" is not a team/);
    const raised = await admin(gw, 'PATCH', `/keys/${created.body.key.id}`, { monthlyCreditCap: 50 });
    expect(raised.body.monthlyCreditCap, 'a team key\'s cap stays within the member cap').to.equal(0.02);
    const left = await admin(gw, 'PATCH', `/keys/${created.body.key.id}`, { team: null, owner: null, monthlyCreditCap: 50 });
    expect(left.body).to.deep.include({ team: null, owner: null, monthlyCreditCap: 50 });
  });
});
