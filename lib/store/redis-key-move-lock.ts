/**
 * The lease lock of a key's move between hash tags (redis-key-move.ts): `{<id>}:move-lock` holds a
 * random token (`SET NX PX`), under the key's own tag beside its pointer and its plan, so one change of
 * a key's team runs at a time across every instance (a config reload runs on all of them at once; an
 * admin PATCH may race it). The owner renews the lease while it works (every third of it), so a move
 * that drains for up to DRAIN_MS keeps it; a crashed owner's lock lapses within one lease. Only the
 * owner releases it (the token is compared in the script), and the move's switch checks the token in
 * the same script that switches (redis-key-move.ts `SWITCH_KEY`): an owner whose lease lapsed while it
 * stalled switches nothing.
 */
import crypto from 'node:crypto';
import { GatewayError } from '../http/errors';
import type { RedisConnection } from './redis-connection';
import type { RedisKeys } from './redis-keys';

/** How long a lock lasts unrenewed, ms: a crashed owner's lock is gone at most this long after the crash. */
export const MOVE_LOCK_LEASE_MS = 5_000;
/**
 * Longest wait for another caller's lock, ms: the drain limit (DRAIN_MS, 10 s) plus a margin for its
 * copy; past it the change is refused (409), nothing changed.
 */
export const MOVE_LOCK_WAIT_MS = 15_000;
/** How often a waiter tries again, ms. */
const MOVE_LOCK_POLL_MS = 50;

/** KEYS: the lock. ARGV: the token, the lease ms. Renews the lease when the token still holds it. */
const RENEW_LOCK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** KEYS: the lock. ARGV: the token. Deletes the lock when the token still holds it. */
const RELEASE_LOCK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`;

/** A held lock: the name and token a fenced script checks (`GET name == token`). */
export interface KeyMoveLock {
  readonly name: string;
  readonly token: string;
  /**
   * Throw unless the lock is still this owner's (a lease that lapsed while the owner stalled).
   * @throws GatewayError 409 naming the key
   */
  check(): Promise<void>;
}

/**
 * The 409 of a change of key `id` that could not take its move lock within `waitMs` (nothing changed),
 * or, none given, of a move that lost its lock before its switch (the move was not made: the key stays
 * where it was, redis-key-move.ts rolls it back).
 */
export function keyMoveBusyError(id: string, waitMs?: number): GatewayError {
  const key = `key "${id.slice(0, 64)}"`;
  const message = waitMs === undefined
    ? `${key} lost its turn to another call before its move between teams' ledgers was switched; the move was not made: try again`
    : `${key} is being changed by another call (a move between teams' ledgers) that did not give way within ${waitMs / 1000} s; nothing changed: try again`;
  return new GatewayError(409, 'invalid_request_error', message, { chatCode: 'conflict' });
}

/**
 * Run `work` holding key `id`'s move lock (see the module comment): wait up to `waitMs` for another
 * owner's lock to go, hold it with a lease renewed every third of `leaseMs`, release it after `work`
 * (whether it succeeded or threw).
 * @param options.waitMs the longest wait for the lock, ms (default MOVE_LOCK_WAIT_MS)
 * @param options.leaseMs the lease, ms (default MOVE_LOCK_LEASE_MS)
 * @returns what `work` returns
 * @throws GatewayError 409 naming the key when the lock was not free within `waitMs` (`work` not run);
 *   what `work` throws
 */
export async function withKeyMoveLock<T>(connection: RedisConnection, keys: RedisKeys, id: string, work: (lock: KeyMoveLock) => Promise<T>,
  options: { waitMs?: number; leaseMs?: number } = {}): Promise<T> {
  const waitMs = options.waitMs ?? MOVE_LOCK_WAIT_MS;
  const leaseMs = options.leaseMs ?? MOVE_LOCK_LEASE_MS;
  const name = keys.moveLock(id);
  const token = crypto.randomUUID();
  const until = Date.now() + waitMs;
  while ((await connection.commands.set(name, token, { NX: true, PX: leaseMs })) === null) {
    if (Date.now() >= until) throw keyMoveBusyError(id, waitMs);
    await new Promise((resolve) => setTimeout(resolve, MOVE_LOCK_POLL_MS));
  }
  let lost = false;
  const renewing = setInterval(() => {
    connection.run(RENEW_LOCK, [name], [token, String(leaseMs)]).then((renewed) => { lost ||= Number(renewed) !== 1; }, () => undefined);
  }, Math.max(1, Math.floor(leaseMs / 3)));
  renewing.unref();
  const lock: KeyMoveLock = {
    name, token,
    async check() {
      if (lost || (await connection.commands.get(name)) !== token) throw keyMoveBusyError(id);
    },
  };
  try {
    return await work(lock);
  } finally {
    clearInterval(renewing);
    await connection.run(RELEASE_LOCK, [name], [token]).catch(() => undefined);
  }
}
