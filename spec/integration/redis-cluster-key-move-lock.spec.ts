/**
 * Concurrent changes of one key's team on a Redis Cluster (redis-key-move.ts, redis-key-move-lock.ts):
 * two instances reloading the same config change, or an admin PATCH racing a reload, run one after the
 * other under the key's move lock; the later one finds the key already moved and copies nothing over the
 * place admissions book in. A lock whose owner died lapses by its lease; one held past the wait is a 409
 * that changes nothing; a store start waits at most one lease for it. A revocation or a rotation made
 * while a move copies the record follows it to the new place. A move that loses its lock before its
 * switch answers 409 and rolls itself back, the key left working where it was.
 */
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { GatewayError } from '../../lib/http/errors';
import { utcMonth } from '../../lib/store/month';
import { moveKeyState, resumeKeyMoves, type KeyMoveStep } from '../../lib/store/redis-key-move';
import { MOVE_LOCK_LEASE_MS, MOVE_LOCK_WAIT_MS } from '../../lib/store/redis-key-move-lock';
import { RedisStore } from '../../lib/store/redis-store';
import type { KeySnapshot, Reservation } from '../../lib/store/types';
import { useClusterStores, type ClusterStore } from '../helpers/cluster-stores';
import { sleep } from '../helpers/redis-process';

const SECRET = 'sk-cs4-test-key-move-lock-0045';
const ROTATED = 'sk-cs4-test-key-move-lock-0046';
const usage = (credits: number) => ({ model: 'model-haiku-4.5', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits });

/** A gate a paused move waits at until the test opens it. */
function gate(): { wait: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { wait: () => opened, open };
}

describe('Redis Cluster: concurrent moves of one key between hash tags (started here)', function () {
  this.timeout(60_000);
  const connect = useClusterStores('key-move-lock');

  const month = utcMonth(Date.now());
  const create = (store: RedisStore) => store.createKey({ id: 'k-lock', secret: { sha256: hashSecret(SECRET), expiresAt: null }, last4: '0045', rateLimitPerMinute: 1000, allowedModels: null, monthlyCreditCap: 100 });
  // A team key's holds reach its team's ledgers too, as the credit reservation step asks (teamCapsOf).
  const admit = async (store: RedisStore, credits: number) => {
    const snapshot = (await store.identifyKey(hashSecret(SECRET), Date.now(), true)) as KeySnapshot;
    const { team, owner } = snapshot.key;
    const teamCaps = team ? { team, owner: owner ?? null, teamCap: null, memberCap: null } : undefined;
    return store.admit({ snapshot, secretSha256: hashSecret(SECRET), now: Date.now(), rateLimitWindowMs: 60_000, reservation: { month, credits, ttlMs: 60_000, teamCaps } });
  };
  // A move of k-lock to `core` by `mover`, once it has copied (holding the lock), paused until `copied` opens.
  const pausedAtCopy = async (mover: ClusterStore) => {
    const reached = gate();
    const copied = gate();
    const moving = moveKeyState(mover.connection, mover.keys, 'k-lock', 'core', { onStep: async (step) => {
      if (step !== 'copy') return;
      reached.open();
      await copied.wait();
    } });
    await reached.wait();
    return { moving, copied };
  };
  const held = async (store: RedisStore, credits: number): Promise<Reservation> => {
    const result = await admit(store, credits);
    if (result.outcome !== 'admitted' || !result.reserved?.ok) throw new Error(`not held: ${JSON.stringify(result)}`);
    return result.reserved.reservation;
  };

  it('two moves of the same key run one after the other: the ledger never goes backwards and the team tag holds all settled spend', async () => {
    const a = await connect();
    const b = await connect();
    await create(a.store);
    await a.store.settleCredits(await held(a.store, 1), usage(1));
    // A pauses once drained (the old place frozen); B, started meanwhile, would switch and pause there.
    const gateA = gate();
    const gateB = gate();
    const reached: string[] = [];
    const pauseAt = (who: string, at: KeyMoveStep, wait: () => Promise<void>) => async (step: KeyMoveStep) => {
      reached.push(`${who}:${step}`);
      if (step === at) await wait();
    };
    // B starts once A holds the lock (A's plan step), not after a guessed delay.
    const planned = gate();
    const moveA = moveKeyState(a.connection, a.keys, 'k-lock', 'core', { onStep: async (step) => {
      if (step === 'plan') planned.open();
      await pauseAt('a', 'drain', gateA.wait)(step);
    } });
    await planned.wait();
    const moveB = moveKeyState(b.connection, b.keys, 'k-lock', 'core', { onStep: pauseAt('b', 'switch', gateB.wait) });
    // Requests keep coming (503 while the key moves, retried), each settled at once; the spend is read after each.
    let settled = 1;
    let last = 1;
    let stop = false;
    const spends: number[] = [];
    const booking = (async () => {
      while (!stop) {
        const result = await admit(b.store, 0.5).catch(() => null);
        if (result?.outcome === 'admitted' && result.reserved?.ok) {
          await b.store.settleCredits(result.reserved.reservation, usage(0.5));
          settled += 0.5;
          const spend = await b.store.getMonthSpend('k-lock', month);
          spends.push(spend);
          expect(spend, `the ledger went backwards after ${reached.join(', ')}`).to.be.at.least(last);
          last = spend;
        }
        await sleep(25);
      }
    })();
    await sleep(700);
    gateA.open();
    await moveA;
    await sleep(300);
    gateB.open();
    await moveB;
    await sleep(200);
    stop = true;
    await booking;
    expect(reached.filter((step) => step.startsWith('b:')), 'B found the key moved and copied nothing').to.deep.equal([]);
    expect(spends.length, 'requests were served at the new place').to.be.above(3);
    expect(await a.connection.commands.hGet(a.keys.key('k-lock'), 'movedTo')).to.equal('core');
    expect(await a.connection.commands.exists([a.keys.move('k-lock'), a.keys.moveLock('k-lock'), a.keys.credits('k-lock', month)])).to.equal(0);
    expect(await a.store.getMonthSpend('k-lock', month), 'all settled spend under the team tag').to.equal(settled);
  });

  it('a lock left by a dead owner lapses by its lease, and a later move succeeds', async () => {
    const { store, connection, keys } = await connect();
    await create(store);
    await store.settleCredits(await held(store, 1), usage(1));
    await connection.commands.set(keys.moveLock('k-lock'), 'dead-owner', { PX: 1_500 });
    const started = Date.now();
    await store.updateKey('k-lock', { team: 'core', owner: 'alice' });
    expect(Date.now() - started, 'waited for the lease').to.be.at.least(1_000);
    expect(await connection.commands.hGet(keys.key('k-lock'), 'movedTo')).to.equal('core');
    expect(await store.getKey('k-lock')).to.deep.include({ team: 'core', owner: 'alice' });
    expect(await store.getMonthSpend('k-lock', month)).to.equal(1);
    await store.settleCredits(await held(store, 2), usage(2));
    expect(await store.getMonthSpend('k-lock', month)).to.equal(3);
  });

  it('a lock held past the wait is a 409 naming the key, and nothing changes', async () => {
    const { store, connection, keys } = await connect();
    await create(store);
    await connection.commands.set(keys.moveLock('k-lock'), 'someone-else', { PX: 60_000 });
    const err = await moveKeyState(connection, keys, 'k-lock', 'core', { waitMs: 300 }).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(GatewayError);
    expect((err as GatewayError).status).to.equal(409);
    expect((err as GatewayError).message).to.match(/key "k-lock" is being changed by another call .*nothing changed: try again/);
    expect(await connection.commands.get(keys.moveLock('k-lock')), 'not released by another owner').to.equal('someone-else');
    expect(await connection.commands.hGet(keys.key('k-lock'), 'movedTo')).to.equal(null);
    expect(await connection.commands.exists(keys.move('k-lock'))).to.equal(0);
    expect(await connection.commands.exists(keys.key('k-lock', 'core'))).to.equal(0);
    await store.settleCredits(await held(store, 1), usage(1));
    expect(await store.getMonthSpend('k-lock', month)).to.equal(1);
  });

  it('a store start waits at most one lease for a busy key\'s lock, and leaves its move to the holder', async () => {
    const { connection, keys } = await connect();
    await connection.commands.set(keys.move('k-lock'), JSON.stringify({ from: null, to: 'core', step: 'copying' }));
    await connection.commands.set(keys.moveLock('k-lock'), 'someone-else', { PX: 60_000 });
    const started = Date.now();
    expect(await resumeKeyMoves(connection, keys)).to.deep.equal([]);
    expect(Date.now() - started, 'one lease, not the full wait').to.be.within(MOVE_LOCK_LEASE_MS - 100, MOVE_LOCK_WAIT_MS - 3_000);
    expect(await connection.commands.exists(keys.move('k-lock')), 'the holder settles it').to.equal(1);
  });

  it('a revocation made while a move copies the record waits for it and reaches the new place', async () => {
    const a = await connect();
    const b = await connect();
    await create(a.store);
    const { moving, copied } = await pausedAtCopy(a);
    const revoking = b.store.updateKey('k-lock', { revoked: true, revokedAtRunTime: true });
    await sleep(300);
    copied.open();
    await moving;
    expect((await revoking).revoked).to.equal(true);
    expect(await a.store.getKey('k-lock')).to.deep.include({ team: 'core', revoked: true });
    expect((await a.store.identifyKey(hashSecret(SECRET), Date.now(), true))?.key.revoked ?? true, 'the key is revoked where it lives').to.equal(true);
  });

  it('a rotation made while a move copies the record waits for it: the new secret works at the new place, the old one has its grace', async () => {
    const a = await connect();
    const b = await connect();
    await create(a.store);
    const { moving, copied } = await pausedAtCopy(a);
    const now = Date.now();
    const rotating = b.store.rotateKey('k-lock', { sha256: hashSecret(ROTATED), expiresAt: null }, '0046', 60_000, now);
    await sleep(300);
    copied.open();
    await moving;
    expect((await rotating).last4).to.equal('0046');
    expect(await a.connection.commands.hGet(a.keys.key('k-lock'), 'movedTo')).to.equal('core');
    expect((await a.store.identifyKey(hashSecret(ROTATED), Date.now(), true))?.key.id, 'the new secret works at the new place').to.equal('k-lock');
    expect((await a.store.identifyKey(hashSecret(SECRET), Date.now(), true))?.key.id, 'the old secret within its grace').to.equal('k-lock');
    expect(await a.store.identifyKey(hashSecret(SECRET), now + 61_000, true), 'the old secret past its grace').to.equal(null);
  });

  it('a move whose lock is taken over at its copy step answers 409 and rolls back: the key stays where it was and works', async () => {
    const { store, connection, keys } = await connect();
    await create(store);
    // Another owner takes the lock over (as after a stalled lease) and lets it go before the switch.
    const err = await moveKeyState(connection, keys, 'k-lock', 'core', { onStep: async (step) => {
      if (step !== 'copy') return;
      await connection.commands.set(keys.moveLock('k-lock'), 'someone-else');
      await connection.commands.del(keys.moveLock('k-lock'));
    } }).then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(GatewayError);
    expect((err as GatewayError).status).to.equal(409);
    expect((err as GatewayError).message).to.match(/key "k-lock" lost its turn to another call .*the move was not made: try again/);
    expect(await connection.commands.hGet(keys.key('k-lock'), 'movedTo')).to.equal(null);
    expect(await connection.commands.exists([keys.move('k-lock'), keys.moveLock('k-lock')]), 'no plan or lock left').to.equal(0);
    expect(await connection.commands.exists(keys.key('k-lock', 'core')), 'no copy left').to.equal(0);
    expect(await connection.commands.hGet(keys.credits('k-lock', month), 'moving'), 'no marker left').to.equal(null);
    await store.settleCredits(await held(store, 1), usage(1));
    expect(await store.getMonthSpend('k-lock', month)).to.equal(1);
  });
});
