/**
 * Which cap a 402 names when a key's own cap equals its member cap (issue 44): a self-service key
 * (`POST /admin/v1/me/keys`) takes the member cap as its own, so its ledger and its member's leave the
 * same credit while it is the member's only key; the refusal names the broader cap, `member`, since
 * raising the key's would not help. A key whose own cap is lower is stopped by it (`key`). Memory store
 * (people-caps.ts decideHold) and Redis (the Lua of redis-team-caps.ts) decide alike.
 */
import { expect } from 'chai';
import type { RedisStore } from '../../lib/store/redis-store';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

/** A chat request whose minimal reply costs more than 0.02 credits (its input alone). */
const LARGE = JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 100, messages: [{ role: 'user', content: 'x'.repeat(20_000) }] });

for (const kind of ['memory', 'redis'] as const) {
  describe(`the 402 of a team key whose cap equals or undercuts the member cap (${kind} store)`, function () {
    this.timeout(30_000);
    let gw: TestGateway | undefined;
    let store: RedisStore | undefined;
    afterEach(async () => {
      await gw?.close();
      if (store) await deleteRedisPrefix(store.prefix);
      gw = store = undefined;
    });

    const refusalOf = async (secret: string) => {
      const res = await fetch(`${gw!.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: LARGE,
      });
      const body = await res.json() as { error: { message: string } };
      return { status: res.status, limit: res.headers.get('x-gateway-limit'), message: body.error?.message };
    };

    it('names `member` when the key\'s own cap is the member cap, `key` when the key\'s is lower', async () => {
      store = kind === 'redis' ? await connectTestRedisStore(uniqueRedisPrefix('member-cap')) : undefined;
      gw = await startTestGateway({
        store, env: { ADMIN_TOKEN },
        overrides: { teams: [{ id: 'core', name: 'Core', monthlyCreditCap: 100, memberMonthlyCreditCap: 0.02 }] },
      });
      // What /me/keys gives a member: their team, themselves as owner, the member cap as the key's own cap.
      const same = await admin(gw, 'POST', '/keys', { name: 'dave laptop', team: 'core', owner: 'dave', monthlyCreditCap: 0.02 });
      expect(same.status).to.equal(201);
      expect(same.body.key.monthlyCreditCap).to.equal(0.02);
      const tie = await refusalOf(same.body.secret);
      expect(tie.status).to.equal(402);
      expect(tie.limit).to.equal('member');
      expect(tie.message).to.match(/^monthly credit cap of this member: 0 of 0\.02 credits spent/);

      const lower = await admin(gw, 'POST', '/keys', { name: 'erin laptop', team: 'core', owner: 'erin', monthlyCreditCap: 0.01 });
      const own = await refusalOf(lower.body.secret);
      expect(own.status).to.equal(402);
      expect(own.limit).to.equal('key');
      expect(own.message).to.match(/^monthly credit cap of this key: 0 of 0\.01 credits spent/);
    });
  });
}
