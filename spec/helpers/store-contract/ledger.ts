/** The store contract's admission and ledger: one-step admission, credit holds, settlement, months and UTC days. */
import { expect } from 'chai';
import { hashSecret } from '../../../lib/keys/secrets';
import { rotateApiKey, setKeyLimits } from '../../../lib/store/key-admin';
import type { KeySnapshot, KeyStore, LedgerStore } from '../../../lib/store/types';
import { type ContractFixture, T0, HOUR, DAY, expectRejection, newKey, usage, units, settleAt } from './shared';

export function describeLedgerStoreContract(current: () => ContractFixture<KeyStore & LedgerStore>): void {
  let f: ContractFixture<KeyStore & LedgerStore>;
  beforeEach(() => {
    f = current();
  });
  const settle = (keyId: string, month: string, credits: number, at: number, model?: string) => settleAt(f.store, keyId, month, credits, at, model);

  describe('admission (auth check, rate-limit count and credit hold in one step)', () => {
    const SECRET = 'sk-cs4-secret-adm-aaaa';
    const admit = async (reservation: { credits: number; minCredits?: number } | null, snapshot?: KeySnapshot) => f.store.admit({
      snapshot: snapshot ?? (await f.store.identifyKey(hashSecret(SECRET), T0))!,
      secretSha256: hashSecret(SECRET), now: T0, rateLimitWindowMs: 60_000,
      reservation: reservation && { month: '2025-06', credits: reservation.credits, minCredits: reservation.minCredits, ttlMs: 60_000 },
    });

    it('holds what is left under the cap when the credits do not fit but the minimum does', async () => {
      await f.store.createKey(newKey('k1', SECRET, { rateLimitPerMinute: 10, monthlyCreditCap: 10 }));
      const first = await admit({ credits: 8, minCredits: 1 });
      expect(first.outcome === 'admitted' && first.reserved?.ok && first.reserved.reservation.credits).to.equal(8);
      const second = await admit({ credits: 8, minCredits: 1 });
      expect(second.outcome === 'admitted' && second.reserved?.ok && second.reserved.reservation.credits).to.equal(2);
      const third = await admit({ credits: 8, minCredits: 1 });
      expect(third.outcome === 'admitted' && third.reserved).to.deep.include({ ok: false, reserved: 10, cap: 10 });
    });

    it('counts each request in the window and holds credits against the cap while within the limit', async () => {
      await f.store.createKey(newKey('k1', SECRET, { rateLimitPerMinute: 3, monthlyCreditCap: 10 }));
      const first = await admit({ credits: 4 });
      expect(first).to.deep.include({ outcome: 'admitted', totalHits: 1 });
      if (first.outcome !== 'admitted') throw new Error('not admitted');
      expect(first.resetTime.getTime()).to.equal(T0 + 60_000);
      expect(first.reserved).to.deep.include({ ok: true, spent: 0 });
      const second = await admit({ credits: 4 });
      expect(second).to.deep.include({ outcome: 'admitted', totalHits: 2 });
      const third = await admit({ credits: 4 });
      expect(third).to.deep.include({ outcome: 'admitted', totalHits: 3 });
      expect(third.outcome === 'admitted' && third.reserved).to.deep.include({ ok: false, reserved: 8, cap: 10 });
      const fourth = await admit({ credits: 1 });
      expect(fourth, 'over the limit: counted, nothing held').to.deep.include({ outcome: 'admitted', totalHits: 4, reserved: null });
      expect(await admit(null)).to.deep.include({ outcome: 'admitted', totalHits: 5, reserved: null });
    });

    it('refuses a revoked key, an unknown secret and an expired one, counting nothing', async () => {
      await f.store.createKey(newKey('k1', SECRET, { rateLimitPerMinute: 5 }));
      const snapshot = (await f.store.identifyKey(hashSecret(SECRET), T0))!;
      await f.store.updateKey('k1', { revoked: true });
      const changed = await admit(null, snapshot);
      expect(changed.outcome).to.equal('changed');
      if (changed.outcome !== 'changed') throw new Error('not changed');
      expect(changed.snapshot.key.revoked).to.equal(true);
      expect(await admit(null, changed.snapshot)).to.deep.equal({ outcome: 'refused', reason: 'revoked' });
      await f.store.updateKey('k1', { revoked: false });
      const fresh = (await f.store.identifyKey(hashSecret(SECRET), T0, true))!;
      expect(await f.store.admit({ snapshot: fresh, secretSha256: hashSecret('sk-cs4-nobody-bbbb'), now: T0, rateLimitWindowMs: 60_000, reservation: null }))
        .to.deep.equal({ outcome: 'refused', reason: 'unknown' });
      await rotateApiKey(f.store, 'k1', HOUR, T0);
      const rotated = (await f.store.identifyKey(hashSecret(SECRET), T0, true))!;
      expect(await f.store.admit({ snapshot: rotated, secretSha256: hashSecret(SECRET), now: T0 + HOUR, rateLimitWindowMs: 60_000, reservation: null }))
        .to.deep.equal({ outcome: 'refused', reason: 'unknown' });
      expect(await admit(null, rotated), 'nothing was counted before').to.deep.include({ outcome: 'admitted', totalHits: 1 });
    });

    it('answers `changed` with the record as it is now when it changed since the snapshot, and admits on that one', async () => {
      await f.store.createKey(newKey('k1', SECRET, { rateLimitPerMinute: 5, monthlyCreditCap: 10 }));
      const old = (await f.store.identifyKey(hashSecret(SECRET), T0))!;
      await setKeyLimits(f.store, 'k1', { monthlyCreditCap: 2 });
      const changed = await admit({ credits: 4 }, old);
      expect(changed.outcome).to.equal('changed');
      if (changed.outcome !== 'changed') throw new Error('not changed');
      expect(changed.snapshot.key.monthlyCreditCap).to.equal(2);
      expect(changed.snapshot.version).to.be.greaterThan(old.version);
      const admitted = await admit({ credits: 4 }, changed.snapshot);
      expect(admitted).to.deep.include({ outcome: 'admitted', totalHits: 1 });
      expect(admitted.outcome === 'admitted' && admitted.reserved).to.deep.include({ ok: false, cap: 2 });
    });
  });


  describe('credits', () => {
    it('holds credits against the cap and refuses what does not fit, with the figures for the message', async () => {
      const a = await f.store.reserveCredits('k1', '2025-06', 4, 10, 60_000);
      const b = await f.store.reserveCredits('k1', '2025-06', 4, 10, 60_000);
      const c = await f.store.reserveCredits('k1', '2025-06', 4, 10, 60_000);
      expect([a.ok, b.ok, c.ok]).to.deep.equal([true, true, false]);
      expect(c).to.deep.include({ ok: false, spent: 0, reserved: 8, cap: 10 });
      if (!a.ok) throw new Error('unreachable');
      await f.store.settleCredits(a.reservation, usage(1.5));
      // 1.5 spent + 4 held + 4 = 9.5 fits now
      const d = await f.store.reserveCredits('k1', '2025-06', 4, 10, 60_000);
      expect(d).to.deep.include({ ok: true, spent: 1.5 });
    });

    it('with a minimum, holds all that is left when the credits do not fit but the minimum does, and says how much', async () => {
      const a = await f.store.reserveCredits('k1', '2025-06', 7, 10, 60_000, 1);
      expect(a).to.deep.include({ ok: true, spent: 0 });
      expect(a.ok && a.reservation.credits, 'fits whole: the credits asked').to.equal(7);
      const b = await f.store.reserveCredits('k1', '2025-06', 7, 10, 60_000, 1);
      expect(b.ok && b.reservation.credits, 'the 3 left').to.equal(3);
      const c = await f.store.reserveCredits('k1', '2025-06', 7, 10, 60_000, 0.000001);
      expect(c, 'nothing left').to.deep.include({ ok: false, spent: 0, reserved: 10, cap: 10 });
      if (!a.ok || !b.ok) throw new Error('unreachable');
      await f.store.settleCredits(a.reservation, usage(6.5));
      await f.store.settleCredits(b.reservation, usage(2.9));
      // 0.6 left: a minimum of 0.7 does not fit, one of 0.6 does (exactly).
      expect((await f.store.reserveCredits('k1', '2025-06', 5, 10, 60_000, 0.7)).ok).to.equal(false);
      const d = await f.store.reserveCredits('k1', '2025-06', 5, 10, 60_000, 0.6);
      expect(d.ok && d.reservation.credits).to.equal(0.6);
    });

    it('no cap never refuses; a cap of 0 refuses everything', async () => {
      expect((await f.store.reserveCredits('k1', '2025-06', 1e6, null, 60_000)).ok).to.equal(true);
      expect((await f.store.reserveCredits('k2', '2025-06', 0.000001, 0, 60_000)).ok).to.equal(false);
    });

    it('is exact with fractional prices: ten holds of 0.1 fit a cap of 1, an eleventh does not', async () => {
      const results = [];
      for (let i = 0; i < 11; i++) results.push((await f.store.reserveCredits('k1', '2025-06', 0.1, 1, 60_000)).ok);
      expect(results.filter(Boolean)).to.have.length(10);
      expect(results[10]).to.equal(false);
    });

    it('50 reservations at once against a cap that fits 10: exactly 10 succeed', async () => {
      const results = await Promise.all(Array.from({ length: 50 }, () => f.store.reserveCredits('k1', '2025-06', 3, 30, 60_000)));
      expect(results.filter((r) => r.ok)).to.have.length(10);
    });

    it('settles once: a second settle of the same reservation changes nothing', async () => {
      const r = await f.store.reserveCredits('k1', '2025-06', 5, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await f.store.settleCredits(r.reservation, usage(2));
      await f.store.settleCredits(r.reservation, usage(2));
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(2);
      expect((await f.store.getUsage('k1', '2025-06'))[0].requests).to.equal(1);
    });

    it('refuses figures out of range before changing anything: the hold stays for the settlement that follows', async () => {
      const r = await f.store.reserveCredits('k1', '2025-06', 5, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      // 1e15 input tokens at 15 credits per million: past the 2^53 units a ledger keeps exactly.
      await expectRejection(f.store.settleCredits(r.reservation, { ...usage(1.5e10), inputTokens: 1e15 }), /credits .* out of range/);
      await expectRejection(f.store.settleCredits(r.reservation, { ...usage(1), outputTokens: 2.5 }), /outputTokens 2.5 is not a non-negative integer/);
      await expectRejection(f.store.settleCredits(r.reservation, { ...usage(1), cacheReadInputTokens: -1 }), /cacheReadInputTokens -1/);
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(0);
      expect(await f.store.getUsage('k1', '2025-06')).to.deep.equal([]);
      const other = await f.store.reserveCredits('k1', '2025-06', 6, 10, 60_000);
      expect(other.ok, 'the first hold still counts').to.equal(false);
      await f.store.settleCredits(r.reservation, usage(5));
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(5);
      expect((await f.store.getUsage('k1', '2025-06'))[0].requests).to.equal(1);
    });

    it('a hold whose request never settles stops counting after its ttl; a late settle is still recorded once', async () => {
      const r = await f.store.reserveCredits('k1', '2025-06', 8, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      expect((await f.store.reserveCredits('k1', '2025-06', 8, 10, 60_000)).ok).to.equal(false);
      f.setNow(T0 + 60_000);
      const after = await f.store.reserveCredits('k1', '2025-06', 8, 10, 60_000);
      expect(after.ok).to.equal(true);
      await f.store.settleCredits(r.reservation, usage(1));
      await f.store.settleCredits(r.reservation, usage(1));
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(1);
    });

    it('a renewed hold keeps counting past its first ttl (a long stream); an expired or settled one is not brought back', async () => {
      const r = await f.store.reserveCredits('k1', '2025-06', 8, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      f.setNow(T0 + 30_000);
      expect(await f.store.renewReservation(r.reservation, 60_000)).to.equal(true);
      f.setNow(T0 + 75_000);
      expect((await f.store.reserveCredits('k1', '2025-06', 8, 10, 60_000)).ok, 'still held at 75 s').to.equal(false);
      f.setNow(T0 + 90_000);
      expect((await f.store.reserveCredits('k1', '2025-06', 8, 10, 60_000)).ok, 'expired at 90 s').to.equal(true);
      expect(await f.store.renewReservation(r.reservation, 60_000), 'expired').to.equal(false);
      const other = await f.store.reserveCredits('k2', '2025-06', 1, null, 60_000);
      if (!other.ok) throw new Error('reserve failed');
      await f.store.settleCredits(other.reservation, usage(1));
      expect(await f.store.renewReservation(other.reservation, 60_000), 'settled').to.equal(false);
    });

    it('holds of different ttls stop counting each at its own expiry, and settling a live or an expired hold counts right', async () => {
      const reserve = async (credits: number, ttlMs: number) => {
        const r = await f.store.reserveCredits('k1', '2025-06', credits, 10, ttlMs);
        if (!r.ok) throw new Error(`reserve of ${credits} failed`);
        return r.reservation;
      };
      const fits = async (credits: number) => {
        const r = await f.store.reserveCredits('k1', '2025-06', credits, 10, 1);
        if (r.ok) await f.store.settleCredits(r.reservation, usage(0));
        return r.ok;
      };
      await reserve(1, 1_000);
      const b = await reserve(2, 5_000);
      const c = await reserve(4, 3_000);
      expect(await fits(3)).to.equal(true);
      expect(await fits(4)).to.equal(false); // 7 held
      f.setNow(T0 + 1_500); // the first hold expired: 6 held
      expect(await fits(4)).to.equal(true);
      expect(await fits(5)).to.equal(false);
      await f.store.settleCredits(b, usage(1)); // live: 4 held, 1 spent
      expect(await fits(5)).to.equal(true);
      expect(await fits(6)).to.equal(false);
      f.setNow(T0 + 3_500); // the third hold expired: nothing held, 1 spent
      expect(await fits(9)).to.equal(true);
      expect(await fits(10)).to.equal(false);
      await f.store.settleCredits(c, usage(2)); // expired, settled late: recorded once
      await f.store.settleCredits(c, usage(2));
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(3);
      expect(await fits(7)).to.equal(true);
      expect(await fits(8)).to.equal(false);
    });

    it('keeps months apart: a new month starts from zero', async () => {
      const r = await f.store.reserveCredits('k1', '2025-06', 10, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await f.store.settleCredits(r.reservation, usage(10));
      expect((await f.store.reserveCredits('k1', '2025-06', 0.5, 10, 60_000)).ok).to.equal(false);
      expect((await f.store.reserveCredits('k1', '2025-07', 10, 10, 60_000)).ok).to.equal(true);
      expect(await f.store.getMonthSpend('k1', '2025-07')).to.equal(0);
    });

    it('keeps a ledger per key, model and month', async () => {
      for (const [model, credits] of [['model-haiku-4.5', 0.25], ['model-haiku-4.5', 0.5], ['model-opus-5', 2]] as const) {
        const r = await f.store.reserveCredits('k1', '2025-06', 3, null, 60_000);
        if (!r.ok) throw new Error('reserve failed');
        await f.store.settleCredits(r.reservation, usage(credits, model));
      }
      const ledger = (await f.store.getUsage('k1', '2025-06')).sort((x, y) => x.model.localeCompare(y.model));
      expect(ledger).to.deep.equal([
        { model: 'model-haiku-4.5', inputTokens: 200, outputTokens: 40, cacheCreationInputTokens: 6, cacheReadInputTokens: 8, credits: 0.75, requests: 2 },
        { model: 'model-opus-5', inputTokens: 100, outputTokens: 20, cacheCreationInputTokens: 3, cacheReadInputTokens: 4, credits: 2, requests: 1 },
      ]);
      expect(await f.store.getUsage('k2', '2025-06')).to.deep.equal([]);
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(2.75);
    });
  });

  describe('days', () => {
    it('keeps totals per key, model and UTC day that add up exactly to the month', async () => {
      const charges: Array<[number, number, string]> = [
        [T0, 0.1, 'model-haiku-4.5'], [T0 + HOUR, 0.2, 'model-haiku-4.5'], [T0 + DAY, 0.3, 'model-opus-5'], [T0 + 3 * DAY, 0.7, 'model-haiku-4.5'],
      ];
      for (const [at, credits, model] of charges) await settle('k1', '2025-06', credits, at, model);
      const days = await f.store.getDailyUsage('k1', '2025-06');
      const byDay = (day: string, model: string) => days.find((row) => row.day === day && row.model === model);
      expect(byDay('2025-06-15', 'model-haiku-4.5')).to.deep.include({ requests: 2, inputTokens: 200, outputTokens: 40, cacheCreationInputTokens: 6, cacheReadInputTokens: 8 });
      expect(units(byDay('2025-06-15', 'model-haiku-4.5')!.credits)).to.equal(units(0.3));
      expect(byDay('2025-06-16', 'model-opus-5')).to.deep.include({ requests: 1, credits: 0.3 });
      expect(byDay('2025-06-18', 'model-haiku-4.5')).to.deep.include({ requests: 1, credits: 0.7 });
      const month = await f.store.getUsage('k1', '2025-06');
      for (const field of ['requests', 'inputTokens', 'outputTokens', 'cacheCreationInputTokens', 'cacheReadInputTokens'] as const) {
        expect(days.reduce((sum, row) => sum + row[field], 0), field).to.equal(month.reduce((sum, row) => sum + row[field], 0));
      }
      expect(days.reduce((sum, row) => sum + units(row.credits), 0)).to.equal(units(await f.store.getMonthSpend('k1', '2025-06')));
      expect(await f.store.getDailyUsage('k2', '2025-06')).to.deep.equal([]);
    });
  });
}
