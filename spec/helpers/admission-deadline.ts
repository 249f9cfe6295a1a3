/**
 * The admission deadline on a Redis store (one server or a cluster): an admission or a credit
 * reservation that reaches the server after its deadline (by the server's clock) counts and holds
 * nothing and is refused; one in time is admitted as before. What a stalled server does with an admission the gateway gave up on
 * (spec/integration/redis-outage.spec.ts drives that with SIGSTOP).
 */
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { createApiKey } from '../../lib/store/key-admin';
import { utcMonth } from '../../lib/store/month';
import type { RedisStore } from '../../lib/store/redis-store';
import type { AdmissionRequest } from '../../lib/store/types';

/** Define the deadline cases on stores from `connect` (a fresh prefix each); `close` ends one. */
export function describeAdmissionDeadline(connect: () => Promise<RedisStore>, close: (store: RedisStore) => Promise<void>): void {
  describe('admission deadline (checked in the script by Redis TIME)', () => {
    let store: RedisStore;
    let request: (deadline?: number) => Promise<AdmissionRequest>;
    beforeEach(async () => {
      store = await connect();
      const issued = await createApiKey(store, { id: 'late', rateLimitPerMinute: 100, monthlyCreditCap: 10 });
      const sha = hashSecret(issued.secret);
      request = async (deadline) => ({
        snapshot: (await store.identifyKey(sha, Date.now()))!, secretSha256: sha, now: Date.now(), rateLimitWindowMs: 60_000,
        reservation: { month: utcMonth(Date.now()), credits: 4, ttlMs: 60_000 }, deadline,
      });
    });
    afterEach(() => close(store));

    it('refuses an admission that reaches Redis past its deadline, counting and holding nothing', async () => {
      let failure: Error | undefined;
      await store.admit(await request(Date.now() - 1000)).catch((err: Error) => (failure = err));
      expect(failure?.message).to.match(/after its deadline/);
      // The next admission is the window's first, and the whole cap is free: nothing was counted or held.
      const next = await store.admit(await request());
      expect(next).to.deep.include({ outcome: 'admitted', totalHits: 1 });
      expect(next.outcome === 'admitted' && next.reserved).to.deep.include({ ok: true, spent: 0 });
      expect((await store.reserveCredits('late', utcMonth(Date.now()), 6, 10, 60_000)).ok, 'the cap less the one hold is free').to.equal(true);
    });

    it('a credit reservation (batches, a measured input) past its deadline holds nothing; one in time holds', async () => {
      const month = utcMonth(Date.now());
      let failure: Error | undefined;
      await store.reserveCredits('late', month, 8, 10, 60_000, undefined, Date.now() - 1000).catch((err: Error) => (failure = err));
      expect(failure?.message).to.match(/after its deadline/);
      expect((await store.reserveCredits('late', month, 8, 10, 60_000, undefined, Date.now() + 2000)).ok, 'the whole cap was free').to.equal(true);
      expect((await store.reserveCredits('late', month, 8, 10, 60_000)).ok, 'and is now held').to.equal(false);
    });

    it('admits one that reaches Redis in time, as without a deadline', async () => {
      const first = await store.admit(await request(Date.now() + 2000));
      expect(first).to.deep.include({ outcome: 'admitted', totalHits: 1 });
      expect(first.outcome === 'admitted' && first.reserved).to.deep.include({ ok: true, spent: 0 });
      const second = await store.admit(await request(Date.now() + 2000));
      expect(second).to.deep.include({ outcome: 'admitted', totalHits: 2 });
      expect(second.outcome === 'admitted' && second.reserved && second.reserved.ok, 'two holds of 4 fit a cap of 10').to.equal(true);
      const third = await store.admit(await request(Date.now() + 2000));
      expect(third.outcome === 'admitted' && third.reserved && third.reserved.ok, 'a third does not').to.equal(false);
    });
  });
}
