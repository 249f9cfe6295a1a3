/**
 * A key's move between hash tags on a Redis Cluster (it joins, leaves or changes team; redis-key-move.ts):
 * the old place is frozen by a marker that admissions and holds honour (503, retried by clients), the
 * move waits for the holds in flight to settle, copies, switches the pointer and removes the old place.
 * Interrupted before its switch (as a crash would), the next store start rolls it back: the caller was
 * told the change failed, and the key stays where it was with its spend; resumed after its switch, it
 * is finished and never copies the old place again. Concurrent moves: redis-cluster-key-move-lock.spec.ts.
 */
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { GatewayError } from '../../lib/http/errors';
import { utcMonth } from '../../lib/store/month';
import { moveKeyState } from '../../lib/store/redis-key-move';
import { RedisStore } from '../../lib/store/redis-store';
import type { KeySnapshot, Reservation } from '../../lib/store/types';
import { useClusterStores } from '../helpers/cluster-stores';

const SECRET = 'sk-cs4-test-key-move-000044';
const TEAM_CAPS = { team: 'core', owner: 'alice', teamCap: null, memberCap: null };
const usage = (credits: number) => ({ model: 'model-haiku-4.5', inputTokens: 10, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits });

describe('Redis Cluster: a key moving between hash tags (started here)', function () {
  this.timeout(60_000);
  const connect = useClusterStores('key-move');

  const month = utcMonth(Date.now());
  const admit = async (store: RedisStore, credits: number, teamCaps?: typeof TEAM_CAPS) => {
    const snapshot = (await store.identifyKey(hashSecret(SECRET), Date.now(), true)) as KeySnapshot;
    return store.admit({ snapshot, secretSha256: hashSecret(SECRET), now: Date.now(), rateLimitWindowMs: 60_000, reservation: { month, credits, ttlMs: 60_000, teamCaps } });
  };
  const held = async (store: RedisStore, credits: number, teamCaps?: typeof TEAM_CAPS): Promise<Reservation> => {
    const result = await admit(store, credits, teamCaps);
    if (result.outcome !== 'admitted' || !result.reserved?.ok) throw new Error(`not held: ${JSON.stringify(result)}`);
    return result.reserved.reservation;
  };
  const refusedWhileMoving = async (call: Promise<unknown>) => {
    const err = await call.then(() => null, (e: unknown) => e);
    expect(err, 'refused while the key moves').to.be.instanceOf(GatewayError);
    expect((err as GatewayError).status).to.equal(503);
    expect((err as GatewayError).message).to.match(/is moving to its team's ledger; retry/);
  };

  it('interrupted after its copy and rolled back at the next start: holds wait, requests get 503 meanwhile, the key stays where it was with its spend', async () => {
    const first = await connect();
    await first.store.createKey({ id: 'k-move', secret: { sha256: hashSecret(SECRET), expiresAt: null }, last4: '0044', rateLimitPerMinute: 1000, allowedModels: null, monthlyCreditCap: 10 });
    await first.store.settleCredits(await held(first.store, 1), usage(1));
    const inFlight = await held(first.store, 2);
    // The move waits for the hold in flight; the process "crashes" once its copy is written.
    let moved = false;
    const move = moveKeyState(first.connection, first.keys, 'k-move', 'core', { steps: ['plan', 'mark', 'drain', 'copy'] }).then(() => (moved = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(moved, 'waiting for the hold in flight').to.equal(false);
    await refusedWhileMoving(admit(first.store, 1));
    await refusedWhileMoving(first.store.reserveCredits('k-move', month, 1, 10, 60_000));
    await first.store.settleCredits(inFlight, usage(1.5));
    await move;
    expect(moved).to.equal(true);
    await refusedWhileMoving(admit(first.store, 1));
    expect(await first.store.getMonthSpend('k-move', month), 'still at its own tag').to.equal(2.5);
    expect(await first.connection.commands.exists(first.keys.key('k-move', 'core')), 'copied').to.equal(1);

    // The caller was told the change failed: the next start rolls the move back (no pointer, no copy, no marker).
    const second = await connect();
    expect(await second.connection.commands.hGet(second.keys.key('k-move'), 'movedTo')).to.equal(null);
    expect(await second.connection.commands.exists(second.keys.move('k-move'))).to.equal(0);
    expect(await second.connection.commands.exists([second.keys.key('k-move', 'core'), second.keys.secrets('k-move', 'core'), second.keys.credits('k-move', month, 'core'), second.keys.usage('k-move', month, 'core')])).to.equal(0);
    expect(await second.connection.commands.hGet(second.keys.credits('k-move', month), 'moving')).to.equal(null);
    const record = await second.store.getKey('k-move');
    expect([record?.team ?? null, record?.owner ?? null], 'the record as it was').to.deep.equal([null, null]);
    expect(await second.store.getMonthSpend('k-move', month), 'nothing lost or billed twice').to.equal(2.5);
    expect((await second.store.getUsage('k-move', month))[0].requests).to.equal(2);
    // Admitted at its own tag, within its cap: 7.5 left, no more.
    const last = await held(second.store, 7.5);
    const over = await admit(second.store, 0.01);
    expect(over.outcome === 'admitted' && over.reserved?.ok).to.equal(false);
    await second.store.settleCredits(last, usage(7.5));
    expect(await second.store.getMonthSpend('k-move', month)).to.equal(10);
    // A later change of team moves it whole.
    await second.store.updateKey('k-move', { team: 'core', owner: 'alice' });
    expect(await second.store.getKey('k-move')).to.deep.include({ team: 'core', owner: 'alice' });
    expect(await second.store.getMonthSpend('k-move', month)).to.equal(10);
  });

  it('resumed after its switch, it only removes the old place: spend settled at the new place meanwhile stays', async () => {
    const first = await connect();
    await first.store.createKey({ id: 'k-move', secret: { sha256: hashSecret(SECRET), expiresAt: null }, last4: '0044', rateLimitPerMinute: 1000, allowedModels: null, monthlyCreditCap: 10, team: 'core', owner: 'alice' });
    await first.store.settleCredits(await held(first.store, 1, TEAM_CAPS), usage(1));
    await moveKeyState(first.connection, first.keys, 'k-move', null, { steps: ['plan', 'mark', 'drain', 'copy', 'switch'] });
    // Live at its own tag already: a request settles there before the move is resumed.
    await first.store.settleCredits(await held(first.store, 2), usage(2));
    await first.store.updateKey('k-move', { team: null, owner: null });
    expect(await first.connection.commands.exists(first.keys.move('k-move'))).to.equal(0);
    expect(await first.connection.commands.exists([first.keys.credits('k-move', month, 'core'), first.keys.key('k-move', 'core')])).to.equal(0);
    expect(await first.store.getMonthSpend('k-move', month), 'the old place was not copied over the live one').to.equal(3);
    expect((await first.store.getKey('k-move'))).to.deep.include({ team: null, owner: null });
  });

  it('gives a move up with 409 when requests in flight outlast the drain, leaving the key where it was and working', async () => {
    const { store, connection, keys } = await connect();
    await store.createKey({ id: 'k-move', secret: { sha256: hashSecret(SECRET), expiresAt: null }, last4: '0044', rateLimitPerMinute: 1000, allowedModels: null, monthlyCreditCap: 10 });
    const inFlight = await held(store, 1);
    const err = await moveKeyState(connection, keys, 'k-move', 'core', { drainMs: 300 }).then(() => null, (e: unknown) => e);
    expect((err as GatewayError).status).to.equal(409);
    expect(await connection.commands.hGet(keys.key('k-move'), 'movedTo')).to.equal(null);
    expect(await connection.commands.exists(keys.move('k-move'))).to.equal(0);
    await store.settleCredits(inFlight, usage(1));
    await store.settleCredits(await held(store, 1), usage(1));
    expect(await store.getMonthSpend('k-move', month)).to.equal(2);
  });
  it('a move that crashed after its marks is rolled back at the next start without waiting for requests in flight; the key works where it was', async function () {
    const first = await connect();
    await first.store.createKey({ id: 'k-move', secret: { sha256: hashSecret(SECRET), expiresAt: null }, last4: '0044', rateLimitPerMinute: 1000, allowedModels: null, monthlyCreditCap: 10 });
    const inFlight = await held(first.store, 1);
    await moveKeyState(first.connection, first.keys, 'k-move', 'core', { steps: ['plan', 'mark'] });
    const started = Date.now();
    const second = await connect();
    expect(Date.now() - started, 'no drain at the start').to.be.below(5_000);
    expect(await second.connection.commands.exists(second.keys.move('k-move'))).to.equal(0);
    expect(await second.connection.commands.hGet(second.keys.key('k-move'), 'movedTo')).to.equal(null);
    await second.store.settleCredits(inFlight, usage(1));
    await second.store.settleCredits(await held(second.store, 1), usage(1));
    expect(await second.store.getMonthSpend('k-move', month)).to.equal(2);
  });
});
