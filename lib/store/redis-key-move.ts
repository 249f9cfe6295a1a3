/**
 * A key that joins, leaves or changes team moves to its new hash tag (redis-keys.ts `keyTag`): its
 * record, secrets, settled reservations, request log outbox and every month's credit, usage and day
 * buckets go under the new tag with their expiries, and the pointer at `{<id>}:key` (field `movedTo`)
 * is set (in a team) or removed (in none). The rate-limit window (at most a minute old) starts again.
 *
 * On a Redis Cluster the old and new places are in different slots, so the move is several steps, made
 * safe by a marker rather than by one script ("no cap passed, nothing lost or double billed"):
 * 1. `plan`: the move is written at `{<id>}:move` (`{from, to, step}`), so a crash leaves it to be
 *    finished (resumeKeyMove: the next change of the key, or the next store start);
 * 2. `mark`: every credit bucket of the old place (this month's and next month's too) gets the field
 *    `moving`; an admission or hold that meets it takes nothing and answers 503 with `retry-after`
 *    (MOVING_LUA), so the old place's ledger is frozen;
 * 3. `drain`: the move waits until the old place holds no live hold (requests in flight settle there);
 *    past DRAIN_MS it is given up (markers removed, nothing moved) with a 409 naming the key;
 * 4. `copy`: the old place is copied to the new one (overwriting, so a copy run twice writes the same);
 * 5. `switch`: the pointer and the plan's step change in one script (both under `{<id>}`): from here
 *    admissions reach the new place, and a resumed move never copies again (the new place is live);
 * 6. `remove`: the old place goes, its secrets first (an instance holding the record as it was gets
 *    `unknown` and reads it again), its marked buckets last; then the plan.
 * Runs in the admin or reload call that changes the key's team, before the record's own update.
 * A late settlement of a hold that had already expired before the move still books in the old place.
 */
import { GatewayError } from '../http/errors';
import { nextUtcMonthStart, utcMonth } from './month';
import type { RedisConnection } from './redis-connection';
import type { RedisKeys } from './redis-keys';
import { globEscape, scanAll } from './redis-migration';

/** Longest wait for the requests in flight of a moving key to settle, ms: past it the move is given up. */
export const DRAIN_MS = 10_000;
/** How often the drain looks again, ms. */
const DRAIN_POLL_MS = 50;

/** The steps of a move, in order (see the module comment). */
export const KEY_MOVE_STEPS = ['plan', 'mark', 'drain', 'copy', 'switch', 'remove'] as const;
export type KeyMoveStep = (typeof KEY_MOVE_STEPS)[number];

/** A move as kept at `{<id>}:move`; `step` is `switch` once the new place is live. */
interface KeyMovePlan {
  from: string | null;
  to: string | null;
  step: 'copying' | 'switched';
}

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
 * Switch the pointer and note it in the plan, in one step (both under `{<id>}`). KEYS: `{<id>}:key`,
 * `{<id>}:move`. ARGV: the new team ('' for none), the plan as switched (JSON).
 */
const SWITCH_KEY = `
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'movedTo') else redis.call('HSET', KEYS[1], 'movedTo', ARGV[1]) end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;

/** The team whose tag holds key `id`'s state (the pointer at `{<id>}:key`), or null for its own tag. */
export async function locateKey(connection: RedisConnection, keys: RedisKeys, id: string): Promise<string | null> {
  return (await connection.commands.hGet(keys.key(id), 'movedTo')) ?? null;
}

/**
 * Move key `id`'s state from team `from`'s tag to team `to`'s (null: its own tag); see the module comment.
 * @param options.steps the steps to run (default all; a test stops part way as a crash would)
 * @throws GatewayError 409 when requests in flight did not settle within DRAIN_MS (nothing moved)
 * @throws Error when Redis fails part way (the plan stays: resumeKeyMove finishes it)
 */
export async function moveKeyState(connection: RedisConnection, keys: RedisKeys, id: string, from: string | null, to: string | null,
  options: { steps?: readonly KeyMoveStep[]; drainMs?: number } = {}): Promise<void> {
  if (from === to) return;
  const steps = options.steps ?? KEY_MOVE_STEPS;
  if (steps.includes('plan')) await connection.commands.set(keys.move(id), JSON.stringify({ from, to, step: 'copying' } satisfies KeyMovePlan));
  await runMove(connection, keys, id, { from, to, step: 'copying' }, steps, options.drainMs ?? DRAIN_MS);
}

/**
 * Finish key `id`'s move if one was left part way (a crash, a failure): the steps after the last
 * one known done. A move not yet switched is run again from its marks (every step is idempotent
 * until the switch); a switched one only removes the old place.
 * @returns whether a move was finished
 * @throws as moveKeyState
 */
export async function resumeKeyMove(connection: RedisConnection, keys: RedisKeys, id: string, drainMs = DRAIN_MS): Promise<boolean> {
  const text = await connection.commands.get(keys.move(id));
  if (text === null) return false;
  const plan = JSON.parse(text) as KeyMovePlan;
  await runMove(connection, keys, id, plan, plan.step === 'switched' ? ['remove'] : KEY_MOVE_STEPS, drainMs);
  return true;
}

/**
 * Finish every move left part way (at a store's start). A move given up for requests in flight (409:
 * the plan dropped, the key where it was and unmarked) does not stop the start.
 * @returns the ids of the keys whose move was finished
 */
export async function resumeKeyMoves(connection: RedisConnection, keys: RedisKeys): Promise<string[]> {
  const finished: string[] = [];
  for (const name of await scanAll(connection, `${globEscape(keys.prefix)}{*}:move`)) {
    const id = /\{([^}]*)\}:move$/.exec(name)?.[1];
    if (id === undefined) continue;
    const done = await resumeKeyMove(connection, keys, id).catch((err: unknown) => {
      if (err instanceof GatewayError && err.status === 409) return false;
      throw err;
    });
    if (done) finished.push(id);
  }
  return finished;
}

/** The names of key `id`'s hashes under team `team`'s tag (own tag: null), by kind, the month buckets found by SCAN. */
async function placeOf(connection: RedisConnection, keys: RedisKeys, id: string, team: string | null) {
  const buckets = async (name: 'credits' | 'usage' | 'usageDay') => {
    const prefix = keys[name](id, '', team);
    return (await scanAll(connection, `${globEscape(prefix)}*`)).map((bucket) => bucket.slice(prefix.length));
  };
  return { credits: await buckets('credits'), usage: await buckets('usage'), usageDay: await buckets('usageDay') };
}

async function runMove(connection: RedisConnection, keys: RedisKeys, id: string, plan: KeyMovePlan, steps: readonly KeyMoveStep[], drainMs: number): Promise<void> {
  const { commands } = connection;
  const { from, to } = plan;
  const now = Date.now();
  const months = [...new Set([...(await placeOf(connection, keys, id, from)).credits, utcMonth(now), utcMonth(nextUtcMonthStart(now))])];
  const marked = months.map((month) => keys.credits(id, month, from));
  if (steps.includes('mark')) for (const bucket of marked) await commands.hSet(bucket, 'moving', to ?? '');
  if (steps.includes('drain') && !(await drained(connection, marked, drainMs))) {
    for (const bucket of marked) await commands.hDel(bucket, 'moving');
    await commands.del(keys.move(id));
    throw new GatewayError(409, 'invalid_request_error', `key "${id.slice(0, 64)}" has requests in flight that did not finish within ${drainMs / 1000} s; its team is unchanged: try again`, { chatCode: 'conflict' });
  }
  if (steps.includes('copy')) await copyPlace(connection, keys, id, from, to);
  if (steps.includes('switch')) await connection.run(SWITCH_KEY, [keys.key(id), keys.move(id)], [to ?? '', JSON.stringify({ ...plan, step: 'switched' })]);
  if (!steps.includes('remove')) return;
  // Secrets first: an admission from a copy of the record as it was finds no secret and reads the key again.
  await commands.del(keys.secrets(id, from));
  if (from === null) {
    const fields = Object.keys(await commands.hGetAll(keys.key(id))).filter((field) => field !== 'movedTo');
    if (fields.length > 0) await commands.hDel(keys.key(id), fields);
  } else {
    await commands.del(keys.key(id, from));
  }
  const old = await placeOf(connection, keys, id, from);
  await commands.del([keys.settled(id, from), keys.rate(id, from), keys.logOutbox(id, from),
    ...old.usage.map((month) => keys.usage(id, month, from)), ...old.usageDay.map((month) => keys.usageDay(id, month, from))]);
  // The marked buckets last: until they go, an admission that still reaches the old place is refused.
  await commands.del([...new Set([...marked, ...old.credits.map((month) => keys.credits(id, month, from))])]);
  await commands.del(keys.move(id));
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

/** Copy key `id`'s state from `from`'s tag to `to`'s, overwriting (the old place is frozen: a second copy writes the same). */
async function copyPlace(connection: RedisConnection, keys: RedisKeys, id: string, from: string | null, to: string | null): Promise<void> {
  const { commands } = connection;
  const record = await commands.hGetAll(keys.key(id, from));
  delete record.movedTo;
  // The record names the team whose tag holds it, even when the call that moves it ends before its own update.
  if (Object.keys(record).length > 0) await commands.hSet(keys.key(id, to), { ...record, team: JSON.stringify(to) });
  await copyHash(connection, keys.secrets(id, from), keys.secrets(id, to));
  const settled = await commands.zRangeWithScores(keys.settled(id, from), 0, -1);
  await commands.del(keys.settled(id, to));
  if (settled.length > 0) await commands.zAdd(keys.settled(id, to), settled);
  // Records a settlement left in the outbox for the sweep (redis-request-log.ts; moved into the log once per id).
  await copyHash(connection, keys.logOutbox(id, from), keys.logOutbox(id, to));
  const old = await placeOf(connection, keys, id, from);
  for (const name of ['credits', 'usage', 'usageDay'] as const) {
    for (const month of old[name]) await copyHash(connection, keys[name](id, month, from), keys[name](id, month, to));
  }
}

/**
 * Copy a hash (but its `moving` marker) to `to` with its expiry, replacing what `to` held (a copy a
 * move gave up on left there is never merged into); none copied when it holds nothing else.
 */
async function copyHash(connection: RedisConnection, from: string, to: string): Promise<void> {
  const { commands } = connection;
  const fields = await commands.hGetAll(from);
  delete fields.moving;
  await commands.del(to);
  if (Object.keys(fields).length === 0) return;
  const ttl = await commands.pTTL(from);
  await commands.hSet(to, fields);
  if (ttl > 0) await commands.pExpire(to, ttl);
}
