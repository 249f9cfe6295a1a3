/**
 * The Redis store's caps at every level (people-caps.ts): the scripts and arguments of a team key's
 * admission, hold, renewal and settlement, which touch its member's and team's month ledgers
 * (`P{team:<id>}:member:<owner>:<YYYY-MM>`, `P{team:<id>}:credits:<YYYY-MM>`: `spent` and `hold:`
 * entries as in a key's bucket, redis-scripts.ts) in the same script as the key's own. A key without
 * a team runs the scripts of redis-scripts.ts unchanged: no extra key, argument or work.
 */
import crypto from 'node:crypto';
import { fromCreditUnits, toCreditUnits, toCreditUnitsCeil } from './credits';
import { EXPIRED_RESERVATION_MEMORY_MS } from './memory-reservations';
import type { TeamCaps } from './people-caps';
import type { CapLevel, Reservation, ReserveResult } from './records';
import type { RedisConnection } from './redis-connection';
import { keyMovingError, MOVING_LUA } from './redis-key-move';
import { BUCKET_RETENTION_MS, type RedisKeys } from './redis-keys';
import { ADMIT_CHECK_LUA, SETTLE_CREDITS, SETTLE_IN_TEAM, SETTLE_IN_TEAM_AS_MEMBER } from './redis-scripts';

/**
 * Lua: `holdAll(buckets, caps, id, units, now, expiry, forget, ttl, min)` holds `units` (credit units)
 * as `hold:<id>` in every bucket when they fit under every capped one (cap -1: none), or, with a
 * minimum (min >= 0), what is left under the tightest when the minimum fits there (decideHold's rule,
 * people-caps.ts). Holds past their expiry stop counting first (as RESERVE_LUA does). Returns {1|0,
 * spent, reserved, held units, index}: the key's (first) bucket's figures when held; refused, the
 * tightest bucket's and its index (1-based; of buckets with the same credit left, the later one).
 */
const HOLD_ALL_LUA = `
local function ledger(bucket, now, forget)
  local spent = tonumber(redis.call('HGET', bucket, 'spent') or '0')
  local reserved = 0
  local fields = redis.call('HGETALL', bucket)
  for i = 1, #fields, 2 do
    local field, value = fields[i], fields[i + 1]
    if string.sub(field, 1, 5) == 'hold:' then
      local sep = string.find(value, ':', 1, true)
      if tonumber(string.sub(value, sep + 1)) <= now then
        redis.call('HDEL', bucket, field)
        redis.call('HSET', bucket, 'expired:' .. string.sub(field, 6), tostring(now + forget))
      else
        reserved = reserved + tonumber(string.sub(value, 1, sep - 1))
      end
    elseif string.sub(field, 1, 8) == 'expired:' and tonumber(value) <= now then
      redis.call('HDEL', bucket, field)
    end
  end
  return spent, reserved
end
local function holdAll(buckets, caps, id, units, now, expiry, forget, ttl, min)
  local spents, reserveds = {}, {}
  local tight, tightLeft = 0, nil
  for i = 1, #buckets do
    spents[i], reserveds[i] = ledger(buckets[i], now, forget)
    if caps[i] >= 0 then
      local left = caps[i] - spents[i] - reserveds[i]
      if tightLeft == nil or left <= tightLeft then tight, tightLeft = i, left end
    end
  end
  local held = units
  if tightLeft ~= nil and units > tightLeft then
    if min < 0 or tightLeft < min then return {0, spents[tight], reserveds[tight], 0, tight} end
    held = tightLeft
  end
  local value = string.format('%d', held) .. ':' .. expiry
  for i = 1, #buckets do
    redis.call('HSET', buckets[i], 'hold:' .. id, value)
    redis.call('PEXPIRE', buckets[i], ttl)
  end
  return {1, spents[1], reserveds[1], held, 1}
end`;

/**
 * A team key's admission: ADMIT (redis-scripts.ts) with its member's and team's ledgers.
 * KEYS: key, secrets, rl, credits:<month>, then [member ledger,] team ledger. ARGV: ADMIT's 13
 * (with a hold: this script is run only for a hold), then the cap (credit units, -1: none) of each
 * ledger after the key's, in KEYS' order (ARGV[9 + i] for KEYS[i]). Returns ADMIT's replies, with
 * the index of the refusing ledger after the hold's figures.
 */
const ADMIT_IN_TEAM = `
local deadline = tonumber(ARGV[6])
if deadline >= 0 then
  local time = redis.call('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > deadline then return {'late'} end
end${MOVING_LUA('KEYS[4]', "{'moving'}")}
${ADMIT_CHECK_LUA}
${HOLD_ALL_LUA}
local buckets, caps = {KEYS[4]}, {tonumber(ARGV[9])}
for i = 5, #KEYS do
  buckets[#buckets + 1] = KEYS[i]
  caps[#caps + 1] = tonumber(ARGV[9 + i])
end
local held = holdAll(buckets, caps, ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[3]), ARGV[10], tonumber(ARGV[11]), ARGV[12], tonumber(ARGV[13]))
return {'admitted', hits, left, held[1], held[2], held[3], held[4], held[5]}
`;

/**
 * A team key's hold outside an admission (RESERVE_CREDITS with its member's and team's ledgers).
 * KEYS: credits:<month>, [member ledger,] team ledger. ARGV: RESERVE_CREDITS' 9, then the cap of each
 * ledger after the key's (ARGV[8 + i] for KEYS[i]). Returns {1|0, spent, reserved, held, index} or {-1}.
 */
const RESERVE_IN_TEAM = `
local deadline = tonumber(ARGV[9])
if deadline >= 0 then
  local time = redis.call('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > deadline then return {-1} end
end${MOVING_LUA('KEYS[1]', '{-2}')}
${HOLD_ALL_LUA}
local buckets, caps = {KEYS[1]}, {tonumber(ARGV[3])}
for i = 2, #KEYS do
  buckets[#buckets + 1] = KEYS[i]
  caps[#caps + 1] = tonumber(ARGV[8 + i])
end
return holdAll(buckets, caps, ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8]))
`;

/**
 * Extend a live hold in every ledger that holds it (RENEW_RESERVATION, redis-scripts.ts, over each
 * of KEYS). ARGV: reservation id, now, new expiry (ms). Returns the key's (KEYS[1]) answer: 1 or 0.
 */
export const RENEW_IN_TEAM = `
local renewed = 0
for i = 1, #KEYS do
  local field = 'hold:' .. ARGV[1]
  local value = redis.call('HGET', KEYS[i], field)
  if value then
    local sep = string.find(value, ':', 1, true)
    local expires = tonumber(string.sub(value, sep + 1))
    if expires > tonumber(ARGV[2]) then
      if i == 1 then renewed = 1 end
      if tonumber(ARGV[3]) > expires then redis.call('HSET', KEYS[i], field, string.sub(value, 1, sep - 1) .. ':' .. ARGV[3]) end
    end
  end
end
return renewed
`;

/** The ledgers after the key's that a team key's hold touches, in order, with their limits. */
function peopleLedgers(keys: RedisKeys, teamCaps: TeamCaps, month: string): Array<{ name: string; limit: CapLevel; cap: number | null }> {
  const team = { name: keys.teamCredits(teamCaps.team, month), limit: 'team' as const, cap: teamCaps.teamCap };
  if (teamCaps.owner === null) return [team];
  return [{ name: keys.memberCredits(teamCaps.team, teamCaps.owner, month), limit: 'member', cap: teamCaps.memberCap }, team];
}

/** A cap as a script argument: credit units, or -1 for none. */
function capArg(cap: number | null): string {
  return String(cap === null ? -1 : toCreditUnits(cap));
}

/** The limit a refused hold names, from the 1-based index the scripts return. */
function limitAt(index: number, ledgers: ReturnType<typeof peopleLedgers>): CapLevel {
  return index <= 1 ? 'key' : ledgers[index - 2].limit;
}

/** The cap of the limit a refused hold names, credits. */
function capAt(index: number, keyCap: number | null, ledgers: ReturnType<typeof peopleLedgers>): number {
  return (index <= 1 ? keyCap : ledgers[index - 2].cap)!;
}

/** The hold's result (ReserveResult) from a script's {1|0, spent, reserved, held, index}. */
function holdResult(reply: number[], hold: { id: string; units: number; credits: number }, keyId: string, month: string, keyCap: number | null,
  teamCaps: TeamCaps, ledgers: ReturnType<typeof peopleLedgers>): ReserveResult {
  const [ok, spent, reserved, held, index] = reply;
  if (ok !== 1) return { ok: false, spent: fromCreditUnits(spent), reserved: fromCreditUnits(reserved), cap: capAt(index, keyCap, ledgers), limit: limitAt(index, ledgers) };
  const credits = held === hold.units ? hold.credits : fromCreditUnits(held);
  return { ok: true, spent: fromCreditUnits(spent), reservation: { id: hold.id, keyId, month, credits, team: teamCaps.team, owner: teamCaps.owner } };
}

/**
 * The script, extra keys and extra arguments of a team key's admission (redis-admission.ts runs it in
 * place of ADMIT), and how to read its hold's figures.
 */
export function admissionInTeam(keys: RedisKeys, teamCaps: TeamCaps, month: string): {
  script: string; keys: string[]; args: string[];
  result(reply: number[], hold: { id: string; units: number; credits: number }, keyId: string, keyCap: number | null): ReserveResult;
} {
  const ledgers = peopleLedgers(keys, teamCaps, month);
  return {
    script: ADMIT_IN_TEAM,
    keys: ledgers.map((ledger) => ledger.name),
    args: ledgers.map((ledger) => capArg(ledger.cap)),
    result: (reply, hold, keyId, keyCap) => holdResult(reply, hold, keyId, month, keyCap, teamCaps, ledgers),
  };
}

/**
 * A team key's hold outside an admission (GatewayStore.reserveCredits with `teamCaps`).
 * @throws Error when the script reached Redis after `deadline` (nothing held)
 */
export async function reserveInTeam(connection: RedisConnection, keys: RedisKeys, request: {
  keyId: string; month: string; credits: number; cap: number | null; now: number; ttlMs: number; minUnits: string; deadline: string; teamCaps: TeamCaps;
}): Promise<ReserveResult> {
  const { keyId, month, credits, cap, now, teamCaps } = request;
  const ledgers = peopleLedgers(keys, teamCaps, month);
  const hold = { id: crypto.randomUUID(), units: toCreditUnitsCeil(credits), credits };
  const reply = (await connection.run(RESERVE_IN_TEAM, [keys.credits(keyId, month, teamCaps.team), ...ledgers.map((ledger) => ledger.name)],
    [hold.id, String(hold.units), capArg(cap), String(now), String(now + request.ttlMs), String(EXPIRED_RESERVATION_MEMORY_MS),
      String(BUCKET_RETENTION_MS), request.minUnits, request.deadline, ...ledgers.map((ledger) => capArg(ledger.cap))])) as number[];
  if (reply[0] === -1) throw new Error('the reservation reached Redis after its deadline (store.timeoutMs): nothing held');
  if (reply[0] === -2) throw keyMovingError(keyId);
  return holdResult(reply, hold, keyId, month, cap, teamCaps, ledgers);
}

/** The ledgers after the key's that hold a reservation's credits (its member's, its team's), by name. */
export function reservationLedgers(keys: RedisKeys, reservation: Reservation): string[] {
  if (!reservation.team) return [];
  return peopleLedgers(keys, { team: reservation.team, owner: reservation.owner ?? null, teamCap: null, memberCap: null }, reservation.month).map((ledger) => ledger.name);
}

/** The settlement script for a reservation held in `ledgers` more ledgers than its key's. */
export function settleScriptFor(ledgers: number): string {
  return ledgers === 0 ? SETTLE_CREDITS : ledgers === 1 ? SETTLE_IN_TEAM : SETTLE_IN_TEAM_AS_MEMBER;
}
