/**
 * The store contract's caps at every level (lib/store/people-caps.ts): a team key's admission and hold
 * fit its own, its member's and its team's month caps in one step, a refusal names the cap that
 * stopped it, and the settlement, renewal and a repeated settlement keep the three ledgers exact.
 */
import { expect } from 'chai';
import { hashSecret } from '../../../lib/keys/secrets';
import type { LedgerStore, KeyStore, ReserveResult, TeamCaps } from '../../../lib/store/types';
import { newKey, T0, usage, type ContractFixture } from './shared';

const MONTH = '2025-06';

export function describeTeamCapsContract(fixture: () => ContractFixture<LedgerStore & KeyStore>): void {
  const f = () => fixture();
  const caps = (owner: string | null, memberCap: number | null, teamCap: number | null): TeamCaps => ({ team: 'core', owner, memberCap, teamCap });
  const admit = async (secret: string, credits: number, teamCaps: TeamCaps, minCredits?: number): Promise<ReserveResult> => {
    const snapshot = (await f().store.identifyKey(hashSecret(secret), T0))!;
    const result = await f().store.admit({
      snapshot, secretSha256: hashSecret(secret), now: T0, rateLimitWindowMs: 60_000,
      reservation: { month: MONTH, credits, minCredits, ttlMs: 60_000, teamCaps },
    });
    if (result.outcome !== 'admitted' || !result.reserved) throw new Error(`not admitted with a hold: ${JSON.stringify(result)}`);
    return result.reserved;
  };
  const SECRET_A = 'sk-cs4-secret-team-aaaa';
  const SECRET_B = 'sk-cs4-secret-team-bbbb';
  const SECRET_C = 'sk-cs4-secret-team-cccc';
  beforeEach(async () => {
    await f().store.createKey(newKey('ka', SECRET_A, { team: 'core', owner: 'alice' }));
    await f().store.createKey(newKey('ka2', SECRET_C, { team: 'core', owner: 'alice' }));
    await f().store.createKey(newKey('kb', SECRET_B, { team: 'core', owner: 'bob', monthlyCreditCap: 3 }));
  });

  it('refuses at the member cap across the member\'s keys, naming it, while another member still fits', async () => {
    const teamCaps = caps('alice', 10, 100);
    expect((await admit(SECRET_A, 6, teamCaps)).ok).to.equal(true);
    const refused = await admit(SECRET_C, 6, teamCaps);
    expect(refused).to.deep.equal({ ok: false, spent: 0, reserved: 6, cap: 10, limit: 'member' });
    expect((await admit(SECRET_B, 2, caps('bob', 10, 100))).ok).to.equal(true);
  });

  it('refuses at the team cap across members, and at the key\'s own cap first when it is the tightest', async () => {
    expect((await admit(SECRET_A, 7, caps('alice', 50, 9))).ok).to.equal(true);
    expect(await admit(SECRET_B, 3, caps('bob', 50, 9))).to.deep.equal({ ok: false, spent: 0, reserved: 7, cap: 9, limit: 'team' });
    expect(await admit(SECRET_B, 4, caps('bob', 50, 100))).to.deep.equal({ ok: false, spent: 0, reserved: 0, cap: 3, limit: 'key' });
  });

  it('holds what is left under the tightest of the three, down to the minimum ("usable to its last credit")', async () => {
    expect((await admit(SECRET_A, 4, caps('alice', 10, 6))).ok).to.equal(true);
    const second = await admit(SECRET_C, 5, caps('alice', 10, 6), 1);
    expect(second.ok && second.reservation.credits, 'the team has 2 left').to.equal(2);
    expect(await admit(SECRET_C, 5, caps('alice', 10, 6), 1)).to.deep.include({ ok: false, limit: 'team', reserved: 6, cap: 6 });
  });

  it('settles the real cost in all three ledgers, once; an unused hold frees all three', async () => {
    const teamCaps = caps('alice', 10, 20);
    const held = await admit(SECRET_A, 8, teamCaps);
    if (!held.ok) throw new Error('refused');
    expect(held.reservation).to.deep.include({ team: 'core', owner: 'alice' });
    await f().store.settleCredits(held.reservation, usage(2.5));
    await f().store.settleCredits(held.reservation, usage(2.5));
    expect(await f().store.getMonthSpend('ka', MONTH)).to.equal(2.5);
    expect(await f().store.getTeamMonthSpend('core', MONTH, 'alice')).to.equal(2.5);
    expect(await f().store.getTeamMonthSpend('core', MONTH)).to.equal(2.5);
    expect(await f().store.getTeamMonthSpend('core', MONTH, 'bob')).to.equal(0);
    // 7.5 left for alice: a hold of 7.5 fits exactly, one more credit does not.
    const rest = await admit(SECRET_C, 7.5, teamCaps);
    expect(rest.ok).to.equal(true);
    expect(await admit(SECRET_A, 0.1, teamCaps)).to.deep.include({ ok: false, limit: 'member', spent: 2.5, reserved: 7.5 });
    if (rest.ok) await f().store.settleCredits(rest.reservation, usage(0));
    expect((await admit(SECRET_A, 7.5, teamCaps)).ok, 'the settled-at-zero hold freed the member and team ledgers').to.equal(true);
  });

  it('takes a team key\'s hold outside an admission too (reserveCredits), and renews it in every ledger', async () => {
    const teamCaps = caps('alice', 5, 100);
    const held = await f().store.reserveCredits('ka', MONTH, 4, null, 60_000, undefined, undefined, teamCaps);
    if (!held.ok) throw new Error('refused');
    expect(await f().store.renewReservation(held.reservation, 120_000)).to.equal(true);
    expect(await f().store.reserveCredits('ka2', MONTH, 2, null, 60_000, undefined, undefined, teamCaps))
      .to.deep.equal({ ok: false, spent: 0, reserved: 4, cap: 5, limit: 'member' });
  });

  it('a team key whose member has no cap and no owner holds against the team\'s ledger only', async () => {
    expect((await admit(SECRET_A, 6, { team: 'core', owner: null, memberCap: null, teamCap: 8 })).ok).to.equal(true);
    expect(await admit(SECRET_B, 3, { team: 'core', owner: null, memberCap: null, teamCap: 8 })).to.deep.include({ ok: false, limit: 'team' });
  });

  it('a key that joins a team keeps its secret, spend and usage, and is held against the team\'s caps from then on; leaving undoes it', async () => {
    const SECRET_D = 'sk-cs4-secret-team-dddd';
    await f().store.createKey(newKey('kd', SECRET_D, { monthlyCreditCap: 50 }));
    const before = await f().store.reserveCredits('kd', MONTH, 5, 50, 60_000);
    if (!before.ok) throw new Error('refused');
    await f().store.settleCredits(before.reservation, usage(3));
    const stale = (await f().store.identifyKey(hashSecret(SECRET_D), T0))!;
    await f().store.updateKey('kd', { team: 'core', owner: 'dave' });
    // An instance's copy from before the move is told the key changed, and where it is now.
    const moved = await f().store.admit({ snapshot: stale, secretSha256: hashSecret(SECRET_D), now: T0, rateLimitWindowMs: 60_000, reservation: null });
    expect(moved.outcome === 'changed' && moved.snapshot.key.team).to.equal('core');
    expect(await f().store.getKey('kd')).to.deep.include({ team: 'core', owner: 'dave', monthlyCreditCap: 50 });
    expect(await f().store.getMonthSpend('kd', MONTH)).to.equal(3);
    expect((await f().store.getUsage('kd', MONTH))[0]).to.deep.include({ requests: 1, credits: 3 });
    const snapshot = (await f().store.identifyKey(hashSecret(SECRET_D), T0, true))!;
    expect(snapshot.key.team).to.equal('core');
    expect(await admit(SECRET_D, 2, caps('dave', 1, 100))).to.deep.include({ ok: false, limit: 'member', cap: 1 });
    const held = await admit(SECRET_D, 1, caps('dave', 1, 100));
    if (!held.ok) throw new Error('refused');
    await f().store.settleCredits(held.reservation, usage(1));
    expect(await f().store.getMonthSpend('kd', MONTH)).to.equal(4);
    expect(await f().store.getTeamMonthSpend('core', MONTH, 'dave')).to.equal(1);
    await f().store.updateKey('kd', { team: null, owner: null });
    expect(await f().store.getMonthSpend('kd', MONTH)).to.equal(4);
    expect((await f().store.identifyKey(hashSecret(SECRET_D), T0, true))!.key.team).to.equal(null);
  });
}
