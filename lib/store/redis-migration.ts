/**
 * Moves a Redis store written by an earlier gateway (layout 1: `P key:<id>`, `P secrets:<id>`,
 * `P credits:<id>:<month>`, ... with no hash tags, `P alerts`, `P alerts-due`, `P alert-fired:<id>`)
 * to the layout of redis-scripts.ts, where each API key's state carries its hash tag. Runs when a
 * store connects and the `P layout` marker is not `2`, under a lock so one instance does it while
 * the others wait. Secrets keep working: their index entries (`P secret:<sha>`) keep their names,
 * and spend, usage, holds in flight and pending alerts move with their expiries. Rate-limit windows
 * (at most a minute old) are dropped.
 */
import crypto from 'node:crypto';
import type { RedisConnection } from './redis-connection';
import { REDIS_LAYOUT, type RedisKeys } from './redis-keys';

/** How long one instance may hold the migration lock, ms; others wait up to as long for the marker. */
const LOCK_MS = 60_000;

/**
 * Migrate to the current layout when needed (see the module comment).
 * @returns how many API keys were moved (0 when the store was already in the current layout)
 * @throws Error when another instance holds the lock for longer than a minute
 */
export async function migrateLayout(connection: RedisConnection, keys: RedisKeys): Promise<number> {
  const { commands } = connection;
  if ((await commands.get(keys.layout)) === REDIS_LAYOUT) return 0;
  const lock = `${keys.prefix}layout-migration`;
  const token = crypto.randomUUID();
  if ((await commands.set(lock, token, { NX: true, PX: LOCK_MS })) === null) {
    const until = Date.now() + LOCK_MS;
    while (Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if ((await commands.get(keys.layout)) === REDIS_LAYOUT) return 0;
    }
    throw new Error(`the Redis store's layout migration (lock ${lock}) did not finish within ${LOCK_MS / 1000} s`);
  }
  const old = (name: string) => keys.prefix + name;
  const ids = await commands.sMembers(keys.keys);
  let moved = 0;
  for (const id of ids) {
    if (await moveHash(connection, old(`key:${id}`), keys.key(id))) moved += 1;
    await moveHash(connection, old(`secrets:${id}`), keys.secrets(id));
    for (const [kind, name] of [['credits', keys.credits.bind(keys)], ['usage', keys.usage.bind(keys)], ['usage-day', keys.usageDay.bind(keys)]] as const) {
      const pattern = `${globEscape(old(`${kind}:${id}:`))}*`;
      for (const bucket of await scanAll(connection, pattern)) {
        await moveHash(connection, bucket, name(id, bucket.slice(old(`${kind}:${id}:`).length)));
      }
    }
    await commands.del(old(`rl:${id}`));
  }
  for (const fired of await scanAll(connection, `${globEscape(old('alert-fired:'))}*`)) {
    const ttl = await commands.pTTL(fired);
    const value = await commands.get(fired);
    if (value !== null) await commands.set(keys.alertFired(fired.slice(old('alert-fired:').length)), value, ttl > 0 ? { PX: ttl } : {});
    await commands.del(fired);
  }
  for (const due of await commands.zRangeWithScores(old('alerts-due'), 0, -1)) await commands.zAdd(keys.alertsDue, due);
  await commands.del(old('alerts-due'));
  await moveHash(connection, old('alerts'), keys.alertsPending);
  await commands.set(keys.layout, REDIS_LAYOUT);
  if ((await commands.get(lock)) === token) await commands.del(lock);
  return moved;
}

/** Copy a hash to its new name with its expiry, then delete the old one. Returns false when there was none. */
export async function moveHash(connection: RedisConnection, from: string, to: string): Promise<boolean> {
  const { commands } = connection;
  const fields = await commands.hGetAll(from);
  if (Object.keys(fields).length === 0) return false;
  const ttl = await commands.pTTL(from);
  await commands.hSet(to, fields);
  if (ttl > 0) await commands.pExpire(to, ttl);
  await commands.del(from);
  return true;
}

/** Every key matching `pattern` on every primary. */
export async function scanAll(connection: RedisConnection, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of await connection.primaries()) {
    for await (const batch of node.scanIterator({ MATCH: pattern, COUNT: 1000 })) found.push(...batch);
  }
  return found;
}

/** `text` with the characters SCAN's MATCH treats as a pattern escaped. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
