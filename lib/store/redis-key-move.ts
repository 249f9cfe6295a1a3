/**
 * A key that joins, leaves or changes team moves to its new hash tag (redis-keys.ts `keyTag`): its
 * record, secrets, settled reservations and every month's credit, usage and day buckets are copied
 * under the new tag with their expiries and removed from the old one (redis-migration.ts's moveHash),
 * and the pointer at `{<id>}:key` is set (in a team) or removed (in none). The rate-limit window (at
 * most a minute old) starts again. Runs in the admin or reload call that changes the key's team,
 * before the record's own update (which counts one more version, so every instance's copy of it
 * is refreshed by its next admission). Not atomic across slots: a request of the key in flight during
 * the move settles in the old buckets (its hold was taken there), so move a key while it is idle.
 */
import type { RedisConnection } from './redis-connection';
import type { RedisKeys } from './redis-keys';
import { globEscape, moveHash, scanAll } from './redis-migration';

/** The team whose tag holds key `id`'s state (the pointer at `{<id>}:key`), or null for its own tag. */
export async function locateKey(connection: RedisConnection, keys: RedisKeys, id: string): Promise<string | null> {
  return (await connection.commands.hGet(keys.key(id), 'movedTo')) ?? null;
}

/**
 * Move key `id`'s state from team `from`'s tag to team `to`'s (null: its own tag); see the module comment.
 * @throws Error when Redis fails part way (the state moved so far stays where it was written; run it again)
 */
export async function moveKeyState(connection: RedisConnection, keys: RedisKeys, id: string, from: string | null, to: string | null): Promise<void> {
  if (from === to) return;
  const { commands } = connection;
  // Leaving a team: the pointer goes first, since the record comes back to its place.
  if (to === null) await commands.del(keys.key(id));
  await moveHash(connection, keys.key(id, from), keys.key(id, to));
  await moveHash(connection, keys.secrets(id, from), keys.secrets(id, to));
  const settled = await commands.zRangeWithScores(keys.settled(id, from), 0, -1);
  if (settled.length > 0) await commands.zAdd(keys.settled(id, to), settled);
  await commands.del([keys.settled(id, from), keys.rate(id, from)]);
  // Records a settlement left in the outbox for the sweep (redis-request-log.ts; moved into the log once per id).
  await moveHash(connection, keys.logOutbox(id, from), keys.logOutbox(id, to));
  for (const name of ['credits', 'usage', 'usageDay'] as const) {
    const prefix = keys[name](id, '', from);
    for (const bucket of await scanAll(connection, `${globEscape(prefix)}*`)) {
      await moveHash(connection, bucket, keys[name](id, bucket.slice(prefix.length), to));
    }
  }
  if (to !== null) await commands.hSet(keys.key(id), 'movedTo', to);
}
