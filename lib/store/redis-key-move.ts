/**
 * A key that joins, leaves or changes team moves to its new hash tag (redis-keys.ts `keyTag`): its
 * record, secrets, settled reservations, request log outbox and every month's credit, usage and day
 * buckets go under the new tag with their expiries, and the pointer at `{<id>}:key` (field `movedTo`)
 * is set (in a team) or removed (in none). The rate-limit window (at most a minute old) starts again.
 *
 * On a Redis Cluster the old and new places are in different slots, so the move is several steps, made
 * safe by a marker rather than by one script ("no cap passed, nothing lost or double billed"):
 * 1. `plan`: the move is written at `{<id>}:move` (`{from, to, step}`), so a crash leaves a trace;
 * 2. `mark`: every credit bucket of the old place (this month's and next month's too) gets the field
 *    `moving`; an admission or hold that meets it takes nothing and answers 503 with `retry-after`
 *    (MOVING_LUA), so the old place's ledger is frozen;
 * 3. `drain`: the move waits until the old place holds no live hold (requests in flight settle there);
 *    past DRAIN_MS it is rolled back (below) with a 409 naming the key;
 * 4. `copy`: the old place is copied to the new one (overwriting what a rolled-back copy left there);
 * 5. `switch`: the pointer and the plan's step change in one script (both under `{<id>}`): from here
 *    admissions reach the new place, and the move counts as made;
 * 6. `remove`: the old place goes, its secrets first (an instance holding the record as it was gets
 *    `unknown` and reads it again), its marked buckets last; then the plan.
 *
 * One change of a key's team at a time: every step runs holding the key's lease lock (`{<id>}:move-lock`,
 * redis-key-move-lock.ts), which the switch checks in its own script. A config reload runs on every
 * instance at once and an admin PATCH may race it: the later caller waits for the lock (up to
 * MOVE_LOCK_WAIT_MS), then reads where the key is and moves it only if it is not already where it
 * should be; a second copy never overwrites a place that admissions already book in. Past the wait it
 * gets a 409 naming the key, nothing changed.
 *
 * A move left part way (a crash, a lost lock, a Redis failure) is settled by the next change of the key
 * or the next store start (resumeKeyMove), under the lock, by its plan's step:
 * - not switched: rolled back, because its caller was told the change failed (and wrote no audit entry):
 *   the copy at the new place is removed, the old place's markers are removed, the plan is dropped. The
 *   key stays where it was, its record (team and owner) as they were, and works.
 * - switched: finished (the old place removed), because the new place is live and may hold spend. The
 *   record there names the new team (the copy sets `team`); the rest of the caller's change (an owner)
 *   was never written, as the caller was told.
 * A move that loses its lock before its switch rolls itself back at once when the lock is free.
 * Runs in the admin or reload call that changes the key's team (RedisStore.updateKey), holding the lock
 * through the record's own update, so the record and its place agree whichever caller runs last; a
 * rotation or replacement of the key's secret holds it too (RedisStore.rotateKey, replaceSecret).
 * A late settlement of a hold that had already expired before the move still books in the old place.
 */
import { GatewayError } from '../http/errors';
import { nextUtcMonthStart, utcMonth } from './month';
import type { RedisConnection } from './redis-connection';
import { keyMoveBusyError, MOVE_LOCK_LEASE_MS, withKeyMoveLock, type KeyMoveLock } from './redis-key-move-lock';
import { copyPlace, placeOf, removePlace } from './redis-key-place';
import type { RedisKeys } from './redis-keys';
import { globEscape, scanAll } from './redis-migration';

/** Longest wait for the requests in flight of a moving key to settle, ms: past it the move is given up. */
export const DRAIN_MS = 10_000;
/** How often the drain looks again, ms. */
const DRAIN_POLL_MS = 50;

/** The steps of a move, in order (see the module comment). */
export const KEY_MOVE_STEPS = ['plan', 'mark', 'drain', 'copy', 'switch', 'remove'] as const;
export type KeyMoveStep = (typeof KEY_MOVE_STEPS)[number];

/** A move as kept at `{<id>}:move`; `step` is `switched` once the new place is live. */
interface KeyMovePlan {
  from: string | null;
  to: string | null;
  step: 'copying' | 'switched';
}

/** What settling a move left part way did: rolled it back (not switched), finished it (switched), or nothing (none). */
export type KeyMoveOutcome = 'rolledBack' | 'finished' | null;

/**
 * Lua that returns `refused` when the credit bucket (a Lua expression) carries the `moving` marker:
 * the key's state is being moved to another hash tag, and no hold may be taken where it is leaving
 * until the move is done (ADMIT, RESERVE_CREDITS and a team key's, redis-scripts.ts, redis-team-caps.ts).
 */
export function MOVING_LUA(bucket: string, refused: string): string {
  return `
if redis.call('HEXISTS', ${bucket}, 'moving') == 1 then return ${refused} end`;
}

/** The 503 of a request of a key whose state is being moved (retried by clients: `retry-after`). */
export function keyMovingError(id: string): GatewayError {
  return new GatewayError(503, 'api_error', `key "${id.slice(0, 64)}" is moving to its team's ledger; retry in a second`, {
    chatCode: 'service_unavailable', headers: { 'retry-after': '1' },
  });
}

/**
 * Switch the pointer and note it in the plan, in one step (all under `{<id>}`), only while the caller
 * still holds the move lock. KEYS: `{<id>}:key`, `{<id>}:move`, `{<id>}:move-lock`. ARGV: the new team
 * ('' for none), the plan as switched (JSON), the lock's token. Returns 0 (nothing switched) for a lost lock.
 */
const SWITCH_KEY = `
if redis.call('GET', KEYS[3]) ~= ARGV[3] then return 0 end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'movedTo') else redis.call('HSET', KEYS[1], 'movedTo', ARGV[1]) end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;

/** The team whose tag holds key `id`'s state (the pointer at `{<id>}:key`), or null for its own tag. */
export async function locateKey(connection: RedisConnection, keys: RedisKeys, id: string): Promise<string | null> {
  return (await connection.commands.hGet(keys.key(id), 'movedTo')) ?? null;
}

/** Options of a move; `steps` and `onStep` are for tests (a crash part way, a pause between steps). */
export interface KeyMoveOptions {
  /** The steps to run (default all; a test stops part way as a crash would). */
  steps?: readonly KeyMoveStep[];
  /** Longest wait for requests in flight, ms (default DRAIN_MS). */
  drainMs?: number;
  /** The key's move lock when the caller holds it already (RedisStore.updateKey); else taken here. */
  lock?: KeyMoveLock;
  /** Longest wait for another caller's lock, ms (default MOVE_LOCK_WAIT_MS). */
  waitMs?: number;
  /** Called after each step run, holding the lock (a test pauses a move there). */
  onStep?: (step: KeyMoveStep) => Promise<void>;
}

/**
 * Move key `id`'s state to team `to`'s tag (null: its own tag) from wherever it is; see the module
 * comment. Holding the key's move lock it settles a move left part way, reads where the key is, and
 * does nothing when it is already at `to`.
 * @throws GatewayError 409 naming the key when requests in flight did not settle within `drainMs`
 *   (rolled back: nothing moved), or another caller held the lock past `waitMs` (nothing changed), or
 *   the lock was lost before the switch (rolled back at once when the lock is free, else by the next settle)
 * @throws Error when Redis fails part way (the plan stays: resumeKeyMove rolls it back or finishes it)
 */
export async function moveKeyState(connection: RedisConnection, keys: RedisKeys, id: string, to: string | null, options: KeyMoveOptions = {}): Promise<void> {
  const { lock } = options;
  if (lock === undefined) return withKeyMoveLock(connection, keys, id, (held) => moveKeyState(connection, keys, id, to, { ...options, lock: held }), options);
  await settleMove(connection, keys, id);
  const from = await locateKey(connection, keys, id);
  if (from === to) return;
  const steps = options.steps ?? KEY_MOVE_STEPS;
  const plan: KeyMovePlan = { from, to, step: 'copying' };
  if (steps.includes('plan')) {
    await connection.commands.set(keys.move(id), JSON.stringify(plan));
    await options.onStep?.('plan');
  }
  await runMove(connection, keys, id, plan, steps, lock, options);
}

/**
 * Settle key `id`'s move if one was left part way (a crash, a lost lock, a failure), holding its move
 * lock: a move not switched is rolled back (the key stays where it was), a switched one is finished
 * (the old place removed); see the module comment.
 * @param options.lock the key's move lock when the caller holds it already; else taken here
 * @throws GatewayError 409 when another caller held the lock past `waitMs` (nothing changed)
 * @throws Error when Redis fails part way (the plan stays, settled again next time)
 */
export async function resumeKeyMove(connection: RedisConnection, keys: RedisKeys, id: string,
  options: { lock?: KeyMoveLock; waitMs?: number } = {}): Promise<KeyMoveOutcome> {
  if (options.lock !== undefined) return settleMove(connection, keys, id);
  return withKeyMoveLock(connection, keys, id, () => settleMove(connection, keys, id), options);
}

/**
 * Settle every move left part way (at a store's start), waiting at most one lease (MOVE_LOCK_LEASE_MS)
 * for each key's lock. A key whose lock another caller holds past it (409: that caller settles it)
 * does not stop the start.
 * @returns the ids of the keys whose move was rolled back or finished
 */
export async function resumeKeyMoves(connection: RedisConnection, keys: RedisKeys): Promise<string[]> {
  const settled: string[] = [];
  for (const name of await scanAll(connection, `${globEscape(keys.prefix)}{*}:move`)) {
    const id = /\{([^}]*)\}:move$/.exec(name)?.[1];
    if (id === undefined) continue;
    // One lease at most per busy key (its holder settles it), not the full wait one key after another.
    const outcome = await resumeKeyMove(connection, keys, id, { waitMs: MOVE_LOCK_LEASE_MS }).catch((err: unknown) => {
      if (err instanceof GatewayError && err.status === 409) return null;
      throw err;
    });
    if (outcome !== null) settled.push(id);
  }
  return settled;
}

/** The old place's credit buckets a move marks: every month it holds, this month's and next month's. */
async function markedBuckets(connection: RedisConnection, keys: RedisKeys, id: string, from: string | null): Promise<string[]> {
  const now = Date.now();
  const months = [...new Set([...(await placeOf(connection, keys, id, from)).credits, utcMonth(now), utcMonth(nextUtcMonthStart(now))])];
  return months.map((month) => keys.credits(id, month, from));
}

/** Roll back or finish a move left part way (the caller holds the lock). */
async function settleMove(connection: RedisConnection, keys: RedisKeys, id: string): Promise<KeyMoveOutcome> {
  const text = await connection.commands.get(keys.move(id));
  if (text === null) return null;
  const plan = JSON.parse(text) as KeyMovePlan;
  // The pointer and the step change in one script; the pointer is checked too, so a live place is never removed.
  if (plan.step === 'switched' || (await locateKey(connection, keys, id)) === plan.to) {
    await removePlace(connection, keys, id, plan.from, await markedBuckets(connection, keys, id, plan.from));
    await connection.commands.del(keys.move(id));
    return 'finished';
  }
  await rollBack(connection, keys, id, plan);
  return 'rolledBack';
}

/**
 * Undo a move not switched: the new place (never live: the pointer still names the old) goes, then the
 * old place's markers, then the plan, so a failure part way leaves the plan to be rolled back again.
 */
async function rollBack(connection: RedisConnection, keys: RedisKeys, id: string, plan: KeyMovePlan): Promise<void> {
  await removePlace(connection, keys, id, plan.to, []);
  for (const bucket of await markedBuckets(connection, keys, id, plan.from)) await connection.commands.hDel(bucket, 'moving');
  await connection.commands.del(keys.move(id));
}

async function runMove(connection: RedisConnection, keys: RedisKeys, id: string, plan: KeyMovePlan, steps: readonly KeyMoveStep[], lock: KeyMoveLock, options: KeyMoveOptions): Promise<void> {
  const { from, to } = plan;
  const drainMs = options.drainMs ?? DRAIN_MS;
  const marked = await markedBuckets(connection, keys, id, from);
  const ran = (step: KeyMoveStep) => options.onStep?.(step);
  // The lock lost before the switch: roll the move back at once if the lock is free (else whoever holds
  // it settles it), so the key is not left frozen (503) until its next change; then the 409.
  const giveWay = async (err: unknown): Promise<never> => {
    await resumeKeyMove(connection, keys, id, { waitMs: 0 }).catch(() => undefined);
    throw err;
  };
  if (steps.includes('mark')) {
    for (const bucket of marked) await connection.commands.hSet(bucket, 'moving', to ?? '');
    await ran('mark');
  }
  if (steps.includes('drain')) {
    if (!(await drained(connection, marked, drainMs))) {
      await rollBack(connection, keys, id, plan);
      throw new GatewayError(409, 'invalid_request_error', `key "${id.slice(0, 64)}" has requests in flight that did not finish within ${drainMs / 1000} s; its team is unchanged: try again`, { chatCode: 'conflict' });
    }
    await ran('drain');
  }
  if (steps.includes('copy')) {
    // A lease lost while this caller stalled: another caller may be moving the key; copy nothing.
    await lock.check().catch(giveWay);
    await copyPlace(connection, keys, id, from, to);
    await ran('copy');
  }
  if (steps.includes('switch')) {
    const switched = await connection.run(SWITCH_KEY, [keys.key(id), keys.move(id), lock.name], [to ?? '', JSON.stringify({ ...plan, step: 'switched' }), lock.token]);
    if (Number(switched) !== 1) await giveWay(keyMoveBusyError(id));
    await ran('switch');
  }
  if (!steps.includes('remove')) return;
  await removePlace(connection, keys, id, from, marked);
  await connection.commands.del(keys.move(id));
  await ran('remove');
}

/** Whether the buckets hold no live hold (`hold:<id>` = `units:expiry ms`) within `waitMs`. */
async function drained(connection: RedisConnection, buckets: readonly string[], waitMs: number): Promise<boolean> {
  const until = Date.now() + waitMs;
  for (;;) {
    let live = false;
    for (const bucket of buckets) {
      const fields = await connection.commands.hGetAll(bucket);
      live ||= Object.entries(fields).some(([field, value]) => field.startsWith('hold:') && Number(value.split(':')[1]) > Date.now());
    }
    if (!live) return true;
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
  }
}
