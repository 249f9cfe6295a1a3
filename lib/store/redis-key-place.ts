/**
 * The places of a key's state (redis-key-move.ts): under its own hash tag or its team's, the record,
 * secrets, settled reservations, rate-limit window, request log outbox and month buckets. A move finds,
 * copies and removes them here.
 */
import type { RedisConnection } from './redis-connection';
import type { RedisKeys } from './redis-keys';
import { globEscape, scanAll } from './redis-migration';

/** The names of key `id`'s hashes under team `team`'s tag (own tag: null), by kind, the month buckets found by SCAN. */
export async function placeOf(connection: RedisConnection, keys: RedisKeys, id: string, team: string | null) {
  const buckets = async (name: 'credits' | 'usage' | 'usageDay') => {
    const prefix = keys[name](id, '', team);
    return (await scanAll(connection, `${globEscape(prefix)}*`)).map((bucket) => bucket.slice(prefix.length));
  };
  return { credits: await buckets('credits'), usage: await buckets('usage'), usageDay: await buckets('usageDay') };
}

/**
 * Remove key `id`'s state under team `team`'s tag (own tag: null; its pointer `movedTo` stays), and
 * the credit buckets `marked` with the ones found.
 */
export async function removePlace(connection: RedisConnection, keys: RedisKeys, id: string, team: string | null, marked: readonly string[]): Promise<void> {
  const { commands } = connection;
  // Secrets first: an admission from a copy of the record as it was finds no secret and reads the key again.
  await commands.del(keys.secrets(id, team));
  if (team === null) {
    const fields = Object.keys(await commands.hGetAll(keys.key(id))).filter((field) => field !== 'movedTo');
    if (fields.length > 0) await commands.hDel(keys.key(id), fields);
  } else {
    await commands.del(keys.key(id, team));
  }
  const place = await placeOf(connection, keys, id, team);
  await commands.del([keys.settled(id, team), keys.rate(id, team), keys.logOutbox(id, team),
    ...place.usage.map((month) => keys.usage(id, month, team)), ...place.usageDay.map((month) => keys.usageDay(id, month, team))]);
  // The marked buckets last: until they go, an admission that still reaches the old place is refused.
  const credits = [...new Set([...marked, ...place.credits.map((month) => keys.credits(id, month, team))])];
  if (credits.length > 0) await commands.del(credits);
}

/** Copy key `id`'s state from `from`'s tag to `to`'s, overwriting (the old place is frozen: a second copy writes the same). */
export async function copyPlace(connection: RedisConnection, keys: RedisKeys, id: string, from: string | null, to: string | null): Promise<void> {
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
