/**
 * The behaviour every GatewayStore owes, run against each implementation (memory and Redis).
 */
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys';
import { createApiKey, restoreApiKey, revokeApiKey, rotateApiKey, setKeyLimits } from '../../lib/store/key-admin';
import type { BudgetAlert, GatewayStore, KeySnapshot, NewKey, RequestLogRecord, UsageEntry } from '../../lib/store/types';

export interface StoreFixture {
  store: GatewayStore;
  /** Set the store's clock (epoch ms). */
  setNow(ms: number): void;
}

const T0 = Date.UTC(2025, 5, 15, 12, 0, 0);
const HOUR = 3_600_000;

function newKey(id: string, secret: string, overrides: Partial<NewKey> = {}): NewKey {
  return {
    id, secret: { sha256: hashSecret(secret), expiresAt: null }, last4: secret.slice(-4),
    rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null, ...overrides,
  };
}

function usage(credits: number, model = 'model-haiku-4.5'): UsageEntry {
  return { model, inputTokens: 100, outputTokens: 20, cacheCreationInputTokens: 3, cacheReadInputTokens: 4, credits };
}

/** Register the contract tests; `open` makes a fresh, empty store whose clock starts at `T0`. */
export function describeStoreContract(open: () => Promise<StoreFixture>, close: (fixture: StoreFixture) => Promise<void>): void {
  let f: StoreFixture;
  beforeEach(async () => {
    f = await open();
    f.setNow(T0);
  });
  afterEach(async () => close(f));

  describe('keys', () => {
    it('finds a key by the hash of its secret, never by anything else, and keeps its settings', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa', { allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 12.5, rateLimitPerMinute: 7 }));
      const found = await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaaa'));
      expect(found).to.include({ id: 'k1', last4: 'aaaa', revoked: false, rateLimitPerMinute: 7, monthlyCreditCap: 12.5, keyGroup: 'default' });
      expect(found!.allowedModels).to.deep.equal(['model-haiku-4.5']);
      expect(await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaab'))).to.equal(null);
      expect(JSON.stringify(await f.store.listKeys())).not.to.include('sk-cs4-secret-one');
    });

    it('refuses a second key with the same id or the same secret', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa'));
      await expectRejection(f.store.createKey(newKey('k1', 'sk-cs4-other-secret-bbbb')), /already exists/);
      await expectRejection(f.store.createKey(newKey('k2', 'sk-cs4-secret-one-aaaa')), /already in use/);
    });

    it('seedKey leaves a key that exists as it is (run-time changes survive a restart)', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa'));
      await revokeApiKey(f.store, 'k1');
      await f.store.seedKey(newKey('k1', 'sk-cs4-secret-one-aaaa', { rateLimitPerMinute: 999 }));
      expect(await f.store.getKey('k1')).to.include({ revoked: true, rateLimitPerMinute: 60 });
    });

    it('revocation, restore and limit changes are seen by the very next lookup', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa'));
      await f.store.createKey(newKey('k2', 'sk-cs4-secret-two-bbbb'));
      await revokeApiKey(f.store, 'k1');
      expect((await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaaa')))!.revoked).to.equal(true);
      expect((await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-two-bbbb')))!.revoked).to.equal(false);
      await restoreApiKey(f.store, 'k1');
      await setKeyLimits(f.store, 'k1', { rateLimitPerMinute: 5, monthlyCreditCap: null, allowedModels: ['model-opus-5'] });
      expect(await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaaa'))).to.deep.include({
        revoked: false, rateLimitPerMinute: 5, monthlyCreditCap: null, allowedModels: ['model-opus-5'],
      });
      await expectRejection(revokeApiKey(f.store, 'nope'), /does not exist/);
    });

    it('createApiKey returns the secret once and stores only its hash', async () => {
      const issued = await createApiKey(f.store, { id: 'made', rateLimitPerMinute: 10, monthlyCreditCap: 3 });
      expect(issued.secret).to.match(/^sk-cs4-[A-Za-z0-9]{40}$/);
      expect((await f.store.findKeyBySecretHash(hashSecret(issued.secret)))!.id).to.equal('made');
      expect(JSON.stringify(await f.store.listKeys())).not.to.include(issued.secret);
      await expectRejection(createApiKey(f.store, { id: 'bad id!', rateLimitPerMinute: 1 }), /may hold only/);
    });
  });

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

  describe('rotation', () => {
    it('keeps the id, limits and usage; the old secret works through the grace period, then fails', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-old-aaaa', { rateLimitPerMinute: 9 }));
      const r = await f.store.reserveCredits('k1', '2025-06', 1, null, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await f.store.settleCredits(r.reservation, usage(1));
      const issued = await rotateApiKey(f.store, 'k1', 2 * HOUR, T0);
      expect(issued.key).to.include({ id: 'k1', rateLimitPerMinute: 9, last4: issued.secret.slice(-4) });
      const old = hashSecret('sk-cs4-secret-old-aaaa');
      expect((await f.store.findKeyBySecretHash(old, T0 + 2 * HOUR - 1))!.id).to.equal('k1');
      expect(await f.store.findKeyBySecretHash(old, T0 + 2 * HOUR)).to.equal(null);
      expect((await f.store.findKeyBySecretHash(hashSecret(issued.secret), T0 + 100 * HOUR))!.id).to.equal('k1');
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(1);
    });

    it('rotating again during a grace period leaves each earlier secret its own expiry', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-first-aaaa'));
      const second = await rotateApiKey(f.store, 'k1', 10 * HOUR, T0);
      const third = await rotateApiKey(f.store, 'k1', 1 * HOUR, T0 + HOUR);
      const first = hashSecret('sk-cs4-secret-first-aaaa');
      // first: expires at T0+10h (set by the first rotation, not moved by the second)
      expect(await f.store.findKeyBySecretHash(first, T0 + 9 * HOUR)).not.to.equal(null);
      expect(await f.store.findKeyBySecretHash(first, T0 + 10 * HOUR)).to.equal(null);
      // second: expires at T0+1h+1h
      expect(await f.store.findKeyBySecretHash(hashSecret(second.secret), T0 + 2 * HOUR - 1)).not.to.equal(null);
      expect(await f.store.findKeyBySecretHash(hashSecret(second.secret), T0 + 2 * HOUR)).to.equal(null);
      expect(await f.store.findKeyBySecretHash(hashSecret(third.secret), T0 + 1000 * HOUR)).not.to.equal(null);
    });

    it('a grace period of 0 ends the old secret at once', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-old-aaaa'));
      await rotateApiKey(f.store, 'k1', 0, T0);
      expect(await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-old-aaaa'), T0)).to.equal(null);
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
  describe('spend visibility: days, request log, budget alerts', () => {
    const DAY = 24 * HOUR;
    const logRecord = (requestId: string, overrides: Partial<RequestLogRecord> = {}): RequestLogRecord => ({
      time: 0, requestId, keyId: 'k1', keyGroup: 'default', route: 'POST /v1/messages', model: 'model-haiku-4.5', status: 200,
      stopReason: 'end_turn', inputTokens: 100, outputTokens: 20, cacheCreationInputTokens: 3, cacheReadInputTokens: 4, credits: 0,
      firstByteMs: 12.5, durationMs: 40, streamed: false, clientAborted: false, sessionId: 'sess-1', agentId: null, upstreamTarget: null, ...overrides,
    });
    const settle = async (keyId: string, month: string, credits: number, at: number, model = 'model-haiku-4.5', log = true) => {
      const r = await f.store.reserveCredits(keyId, month, 3, null, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await f.store.settleCredits(r.reservation, { ...usage(credits, model), at, log: log ? logRecord(`req_${at}_${credits}`, { keyId }) : undefined });
    };
    const readAll = async (fromMs: number, toMs: number, limit = 2) => {
      const records: RequestLogRecord[] = [];
      let cursor: string | null = null;
      do {
        const page = await f.store.readRequestLog(fromMs, toMs, cursor, limit);
        records.push(...page.records);
        cursor = page.cursor;
      } while (cursor !== null);
      return records;
    };
    const units = (credits: number) => Math.round(credits * 1e9);

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

    it('books a request settled after its month ended on the last day of the month it was reserved in', async () => {
      await settle('k1', '2025-06', 1, Date.UTC(2025, 6, 1, 0, 0, 5));
      const days = await f.store.getDailyUsage('k1', '2025-06');
      expect(days.map((row) => row.day)).to.deep.equal(['2025-06-30']);
      expect(await f.store.getDailyUsage('k1', '2025-07')).to.deep.equal([]);
      const [record] = await readAll(Date.UTC(2025, 5, 30), Date.UTC(2025, 6, 1));
      expect(record.time).to.equal(Date.UTC(2025, 6, 1) - 1);
    });

    it('writes the log record in the settlement step: credits as booked, once, paged in the order written', async () => {
      for (let i = 0; i < 5; i++) await settle(i % 2 ? 'k1' : 'k2', '2025-06', 0.1 * (i + 1), T0 + i * HOUR);
      await f.store.appendRequestLog(logRecord('req_count_tokens', { time: T0 + 30 * 60_000, model: null, route: 'POST /v1/messages/count_tokens' }));
      const r = await f.store.reserveCredits('k1', '2025-06', 1, null, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      const entry = { ...usage(0.5), at: T0 + 6 * HOUR, log: logRecord('req_twice') };
      await f.store.settleCredits(r.reservation, entry);
      await f.store.settleCredits(r.reservation, entry);
      const records = await readAll(T0, T0 + DAY);
      expect(records.map((record) => record.requestId)).to.deep.equal([
        'req_1749988800000_0.1', 'req_1749992400000_0.2', 'req_1749996000000_0.30000000000000004',
        'req_1749999600000_0.4', 'req_1750003200000_0.5', 'req_count_tokens', 'req_twice',
      ]);
      expect(records[0]).to.deep.include({ time: T0, credits: 0.1, keyId: 'k2', status: 200, streamed: false });
      const logged = records.reduce((sum, record) => sum + units(record.credits), 0);
      const days = [...await f.store.getDailyUsage('k1', '2025-06'), ...await f.store.getDailyUsage('k2', '2025-06')];
      expect(logged).to.equal(days.reduce((sum, row) => sum + units(row.credits), 0));
      expect(await readAll(T0 + HOUR, T0 + 2 * HOUR)).to.have.length(1);
      expect(await readAll(T0 + DAY, T0 + 2 * DAY)).to.deep.equal([]);
    });

    it('drops log records past the retention', async () => {
      f.store.setRequestLogRetention(2 * DAY);
      await settle('k1', '2025-06', 0.1, T0);
      await settle('k1', '2025-06', 0.2, T0 + DAY);
      f.setNow(T0 + 2 * DAY + HOUR);
      await settle('k1', '2025-06', 0.3, T0 + 2 * DAY + HOUR);
      const records = await readAll(T0 - DAY, T0 + 3 * DAY);
      expect(records.map((record) => record.credits)).to.deep.equal([0.2, 0.3]);
    });

    it('claims each alert once, keeps it pending through failed attempts, and leases it to one caller at a time', async () => {
      const alert: BudgetAlert = { id: 'k1:2025-06:50', keyId: 'k1', keyName: 'k1', threshold: 50, spent: 5, cap: 10, month: '2025-06', crossedAt: T0 };
      const claims = await Promise.all([f.store.claimBudgetAlert(alert), f.store.claimBudgetAlert(alert), f.store.claimBudgetAlert(alert)]);
      expect(claims.filter(Boolean)).to.have.length(1);
      const leased = await f.store.leaseBudgetAlert(T0, 30_000);
      expect(leased).to.deep.equal({ alert, attempts: 0 });
      expect(await f.store.leaseBudgetAlert(T0 + 1000, 30_000), 'leased to someone else').to.equal(null);
      await f.store.retryBudgetAlert({ alert, attempts: 1 }, T0 + 5000);
      expect(await f.store.leaseBudgetAlert(T0 + 4999, 30_000)).to.equal(null);
      expect(await f.store.leaseBudgetAlert(T0 + 5000, 30_000)).to.deep.equal({ alert, attempts: 1 });
      // A lease that ran out (its holder died) hands the alert on.
      expect(await f.store.leaseBudgetAlert(T0 + 35_000, 30_000)).to.deep.equal({ alert, attempts: 1 });
      await f.store.finishBudgetAlert(alert.id);
      expect(await f.store.leaseBudgetAlert(T0 + DAY, 30_000)).to.equal(null);
      expect(await f.store.claimBudgetAlert(alert), 'never claimed again').to.equal(false);
    });
  });

  describe('pins (message batches, files)', () => {
    it('keeps a pin per kind and id until it is deleted or its time is up', async () => {
      const pin = { kind: 'batch' as const, id: `msgbatch_${Math.random().toString(36).slice(2)}`, keyId: 'k1', data: { billed: false, models: { a: 'm' } } };
      await f.store.savePin(pin, HOUR);
      expect(await f.store.getPin('batch', pin.id)).to.deep.equal(pin);
      expect(await f.store.getPin('file', pin.id), 'kinds apart').to.equal(null);
      await f.store.savePin({ ...pin, data: { billed: true } }, HOUR);
      expect((await f.store.getPin('batch', pin.id))!.data).to.deep.equal({ billed: true });
      expect(await f.store.deletePin('batch', pin.id)).to.equal(true);
      expect(await f.store.getPin('batch', pin.id)).to.equal(null);
      expect(await f.store.deletePin('batch', pin.id)).to.equal(false);
      const file = { kind: 'file' as const, id: `file_${Math.random().toString(36).slice(2)}`, keyId: 'k2', data: {} };
      await f.store.savePin(file, 5);
      f.setNow(T0 + 10);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(await f.store.getPin('file', file.id)).to.equal(null);
    });
  });

  describe('stored responses', () => {
    const record = (id: string, keyId = 'k1') => ({ id, keyId, response: { id, object: 'response', status: 'completed' }, items: [{ role: 'user', content: 'Hi' }] });

    it('keeps a response until it is deleted, as a copy', async () => {
      const saved = record(`resp_${Math.random().toString(36).slice(2)}`);
      await f.store.saveResponse(saved, HOUR);
      const read = await f.store.getResponse(saved.id);
      expect(read).to.deep.equal(saved);
      read!.items.push('changed');
      expect((await f.store.getResponse(saved.id))!.items).to.have.length(1);
      expect(await f.store.deleteResponse(saved.id)).to.equal(true);
      expect(await f.store.getResponse(saved.id)).to.equal(null);
      expect(await f.store.deleteResponse(saved.id)).to.equal(false);
    });

    it('refuses a response that would put its key past maxKeyBytes; other keys are not affected', async () => {
      const owner = `k_${Math.random().toString(36).slice(2)}`;
      const big = (id: string, keyId = owner) => ({ id, keyId, response: {}, items: ['x'.repeat(600)] });
      const first = big(`resp_${Math.random().toString(36).slice(2)}`);
      expect(await f.store.saveResponse(first, HOUR, 1000)).to.equal(true);
      const second = big(`resp_${Math.random().toString(36).slice(2)}`);
      expect(await f.store.saveResponse(second, HOUR, 1000)).to.equal(false);
      expect(await f.store.getResponse(second.id)).to.equal(null);
      expect(await f.store.getResponse(first.id)).to.deep.equal(first);
      expect(await f.store.saveResponse(big(`resp_${Math.random().toString(36).slice(2)}`, `${owner}_other`), HOUR, 1000)).to.equal(true);
    });

    it('forgets a response when its time is up', async () => {
      const saved = record(`resp_${Math.random().toString(36).slice(2)}`);
      await f.store.saveResponse(saved, 5);
      // The memory store reads its clock; Redis expires the key itself, in real time.
      f.setNow(T0 + 10);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(await f.store.getResponse(saved.id)).to.equal(null);
    });
  });
}

export async function expectRejection(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  try {
    await promise;
  } catch (err) {
    expect((err as Error).message).to.match(pattern);
    return;
  }
  throw new Error(`expected a rejection matching ${pattern}`);
}
