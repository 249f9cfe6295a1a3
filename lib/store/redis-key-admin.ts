/**
 * Key management writes of the Redis store that reach more than one slot: a secret's index entry
 * (`secret:<sha>`, in its own slot) is claimed with SET NX before the key's own script runs, and
 * released when that script refuses.
 */
import type { RedisConnection } from './redis-connection';
import { encodeRecord, decodeRecord, translateScriptError } from './redis-codec';
import type { RedisKeys } from './redis-keys';
import { locateKey } from './redis-key-move';
import { CREATE_KEY, REPLACE_SECRET, ROTATE_KEY } from './redis-scripts';
import type { KeyRecord, KeySecret } from './types';

/**
 * Index a new secret under key `id` (`SET NX`: a secret belongs to one key for ever). Returns
 * whether this call made the entry (false: it was there for `id` already).
 * @throws Error `that secret is already in use` when it indexes another key
 */
async function claimSecret(connection: RedisConnection, keys: RedisKeys, sha256: string, id: string): Promise<boolean> {
  const claimed = await connection.commands.set(keys.secret(sha256), id, { NX: true });
  if (claimed !== null) return true;
  if ((await connection.commands.get(keys.secret(sha256))) !== id) throw new Error('that secret is already in use');
  return false;
}

/**
 * Create a key: its secret's index entry, its pointer (a key in a team), then the record and secrets in
 * the key's slot (CREATE_KEY), then its id in the set of keys.
 * @throws Error when the id exists or the secret belongs to another key
 */
export async function createRedisKey(connection: RedisConnection, keys: RedisKeys, record: KeyRecord, sha256: string): Promise<void> {
  const { commands } = connection;
  const team = record.team ?? null;
  // A pointer with no record behind it is what a create in a team interrupted between its two steps left.
  const pointer = await locateKey(connection, keys, record.id);
  if ((await commands.exists(keys.key(record.id, pointer))) === 1) throw translateScriptError(new Error('exists'), record.id);
  const claimed = await claimSecret(connection, keys, sha256, record.id);
  // A key in a team lives under the team's hash tag; its own tag points there (redis-key-move.ts), set
  // first so that the record is never there without it.
  if (team !== null) await commands.hSet(keys.key(record.id), 'movedTo', team);
  else if (pointer !== null) await commands.del(keys.key(record.id));
  try {
    await connection.run(CREATE_KEY, [keys.key(record.id, team), keys.secrets(record.id, team)], [sha256, ...encodeRecord(record)]);
  } catch (err) {
    if (claimed) await commands.del(keys.secret(sha256));
    throw translateScriptError(err, record.id);
  }
  await commands.sAdd(keys.keys, record.id);
}

/**
 * Rotate a key's secret (ROTATE_KEY): the new one becomes current, the current ones expire `graceMs`
 * from `now` (epoch ms), and their index entries get an expiry (or go, for those already expired).
 * @throws Error when the key does not exist or the secret is in use
 */
export async function rotateRedisKey(
  connection: RedisConnection, keys: RedisKeys, id: string, secret: KeySecret, last4: string, graceMs: number, now: number,
): Promise<KeyRecord> {
    if ((await connection.commands.exists(keys.key(id))) === 0) throw translateScriptError(new Error('missing'), id);
    const team = await locateKey(connection, keys, id);
    if (!(await claimSecret(connection, keys, secret.sha256, id))) throw new Error('that secret is already in use');
    let reply: [string[], string[], string[]];
    try {
      reply = (await connection.run(ROTATE_KEY, [keys.key(id, team), keys.secrets(id, team)],
        [secret.sha256, JSON.stringify(last4), String(now), String(graceMs)])) as [string[], string[], string[]];
    } catch (err) {
      await connection.commands.del(keys.secret(secret.sha256));
      throw translateScriptError(err, id);
    }
    const [record, expiring, dropped] = reply;
    // Only tidies the index: the expiry itself is the state in the key's secrets hash. Relative, with a
    // minute to spare, so a caller's clock that differs from the server's never drops it early.
    for (const sha of expiring) await connection.commands.pExpire(keys.secret(sha), graceMs + 60_000);
    for (const sha of dropped) await connection.commands.del(keys.secret(sha));
    return decodeRecord(record);
}

/**
 * Make `secret` key `id`'s only secret at once (REPLACE_SECRET), and drop the index entries of the
 * secrets it replaced.
 * @returns whether anything changed
 * @throws Error when the key does not exist or the secret belongs to another key
 */
export async function replaceRedisSecret(connection: RedisConnection, keys: RedisKeys, id: string, secret: KeySecret, last4: string): Promise<boolean> {
  if ((await connection.commands.exists(keys.key(id))) === 0) throw translateScriptError(new Error('missing'), id);
  const team = await locateKey(connection, keys, id);
  const claimed = await claimSecret(connection, keys, secret.sha256, id);
  let reply: [number, string[]];
  try {
    reply = (await connection.run(REPLACE_SECRET, [keys.key(id, team), keys.secrets(id, team)], [secret.sha256, JSON.stringify(last4)])) as [number, string[]];
  } catch (err) {
    if (claimed) await connection.commands.del(keys.secret(secret.sha256));
    throw translateScriptError(err, id);
  }
  for (const sha of reply[1]) await connection.commands.del(keys.secret(sha));
  return Number(reply[0]) === 1;
}
