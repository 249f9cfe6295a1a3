/**
 * The Lua scripts of the Redis store. Each runs atomically on the server, so a check and the write
 * that depends on it can never be split by another instance's request. Each touches the keys of one
 * API key only, all declared in KEYS and all under the key's hash tag `{<id>}`, so in Redis Cluster
 * every script runs on the one node that holds that key's slot.
 *
 * Layout under the store's prefix P (values are strings; redis-keys.ts names them):
 * - `P{<id>}:key`               hash: the key record, one field per record field, each JSON-encoded,
 *                               and `version` (changes to the record so far)
 * - `P{<id>}:secrets`           hash: secret sha256 -> `current`, or the epoch ms it expires at
 * - `P{<id>}:credits:<YYYY-MM>` hash: `spent` (credit units (credits.ts) settled this UTC month),
 *                               `hold:<reservation id>` = `<units>:<expires at ms>` (in flight),
 *                               `expired:<reservation id>` = `<forget at ms>` (outlived its hold), `moving` (redis-key-move.ts)
 * - `P{<id>}:usage:<YYYY-MM>`   hash: `<model>|<field>` -> integer totals (tokens, credit units, requests)
 * - `P{<id>}:usage-day:<YYYY-MM>` hash: `<YYYY-MM-DD>|<model>|<field>` -> integer totals of one UTC day
 * - `P{<id>}:rl`                rate-limit window counter (INCR; expires at the window's end)
 * - `P{<id>}:settled`           sorted set: reservation ids settled in the last 24 h -> when (ms)
 * - `P secret:<sha256>`         the key id a secret belongs to (expires with a rotated-out secret);
 *                               read once per secret per process (the id of a secret never changes)
 * - `P keys`                    set of key ids
 * - `P request-log`             stream: one entry per request that reached the upstream, field `r` =
 *                               the record's values as a JSON array (redis-spend.ts); ids are
 *                               `<booking ms>-<seq>`, trimmed by age (MINID)
 * - `P{alerts}:fired:<alert id>` set once when a budget alert is claimed (never again that month)
 * - `P{alerts}:due`             sorted set: pending alert id -> epoch ms it is due (or its lease ends)
 * - `P{alerts}:pending`         hash: pending alert id -> `{alert, attempts}` as JSON
 * - `P{audit}:entries`          list: the audit log's entries as JSON, in id order (lib/audit/redis-audit-log.ts)
 * - `P{audit}:head`             hash: `id`, `hash` of the last entry (appends check it in one script)
 * - `P response:<id>`           a stored response (Responses API), JSON
 * - `P layout`                  `2` once this layout is in place (redis-migration.ts moves layout 1)
 *
 * The month is part of the bucket's name, so a new month starts from zero by itself.
 */
import { MOVING_LUA } from './redis-key-move';
export { CREATE_KEY, FIND_KEY, REPLACE_SECRET, ROTATE_KEY, UPDATE_KEY } from './redis-key-scripts';

/**
 * Lua that holds credits against the cap in a month bucket, or finds they do not fit, and returns
 * {1|0, spent, reserved, held units}. When the credits do not fit but the minimum does, it holds all
 * that is left under the cap. Holds past their expiry stop counting and become `expired:` entries,
 * kept for a late settlement. The arguments are Lua expressions: the bucket, the reservation id,
 * credit units (credits.ts), the cap in credit units (-1: no cap), now, hold expiry (ms),
 * forget-expired delay (ms), bucket ttl (ms), minimum credit units (-1: all or nothing).
 */
function RESERVE_LUA(bucket: string, id: string, units: string, cap: string, now: string, expiry: string, forget: string, ttl: string, min: string): string {
  return `
local now = tonumber(${now})
local spent = tonumber(redis.call('HGET', ${bucket}, 'spent') or '0')
local reserved = 0
local fields = redis.call('HGETALL', ${bucket})
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  if string.sub(field, 1, 5) == 'hold:' then
    local sep = string.find(value, ':', 1, true)
    local expires = tonumber(string.sub(value, sep + 1))
    if expires <= now then
      redis.call('HDEL', ${bucket}, field)
      redis.call('HSET', ${bucket}, 'expired:' .. string.sub(field, 6), tostring(now + tonumber(${forget})))
    else
      reserved = reserved + tonumber(string.sub(value, 1, sep - 1))
    end
  elseif string.sub(field, 1, 8) == 'expired:' and tonumber(value) <= now then
    redis.call('HDEL', ${bucket}, field)
  end
end
local cap = tonumber(${cap})
local units = ${units}
if cap >= 0 and spent + reserved + tonumber(units) > cap then
  local left = cap - spent - reserved
  local min = tonumber(${min})
  if min < 0 or left < min then return {0, spent, reserved, 0} end
  units = string.format('%d', left)
end
redis.call('HSET', ${bucket}, 'hold:' .. ${id}, units .. ':' .. ${expiry})
redis.call('PEXPIRE', ${bucket}, ${ttl})
return {1, spent, reserved, tonumber(units)}`;
}

/**
 * Lua that returns \`late\` when the deadline (a Lua expression: server epoch ms, -1 for none) has
 * passed by the server's clock. \`TIME\` before writes is allowed since scripts replicate their
 * effects, not their text: the default from Redis 5, the only mode from Redis 7.
 */
function DEADLINE_LUA(deadline: string, late: string): string {
  return `
local deadline = tonumber(${deadline})
if deadline >= 0 then
  local time = redis.call('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > deadline then return ${late} end
end`;
}

/**
 * Reserve credits against the cap, unless past the deadline (the caller gave up on it: nothing held).
 * KEYS: credits:<month>. ARGV: reservation id, credit units, cap in credit units (-1: no cap), now,
 * hold expiry (ms), forget-expired delay (ms), bucket ttl (ms), minimum credit units (-1: none),
 * deadline (server epoch ms; -1: none). Returns {1|0, spent, reserved, held units}, {-1} when late, or
 * {-2} while the key is being moved (MOVING_LUA).
 */
export const RESERVE_CREDITS = `${DEADLINE_LUA('ARGV[9]', '{-1}')}${MOVING_LUA('KEYS[1]', '{-2}')}
${RESERVE_LUA('KEYS[1]', 'ARGV[1]', 'ARGV[2]', 'ARGV[3]', 'ARGV[4]', 'ARGV[5]', 'ARGV[6]', 'ARGV[7]', 'ARGV[8]')}`;

/**
 * Lua of an admission (ADMIT, and a team key's, redis-team-caps.ts) up to its hold: the secret, the
 * record's version and revocation, the count in the rate-limit window; returns early unless a hold is
 * asked for and the request is within its limit. Leaves `hits` and `left` (window ms) set.
 */
export const ADMIT_CHECK_LUA = `local state = redis.call('HGET', KEYS[2], ARGV[1])
if not state or (state ~= 'current' and tonumber(state) <= tonumber(ARGV[3])) then return {'unknown'} end
local record = redis.call('HMGET', KEYS[1], 'version', 'revoked')
if (record[1] or '0') ~= ARGV[2] then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
  return {'changed', redis.call('HGETALL', KEYS[1])}
end
if record[2] == 'true' then return {'revoked'} end
local hits = redis.call('INCR', KEYS[3])
local left = redis.call('PTTL', KEYS[3])
if left <= 0 then
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
  left = tonumber(ARGV[4])
end
if #ARGV < 7 or hits > tonumber(ARGV[5]) then return {'admitted', hits, left} end`;

/**
 * A request's admission (GatewayStore.admit), the one round trip before its upstream call: check the
 * secret and the record's version and revocation, count the request in the rate-limit window, and
 * when it is within the limit and a hold is asked for, reserve its credits (RESERVE_LUA).
 * First its deadline (DEADLINE_LUA): past it the gateway has answered the request already (503), so
 * the script does nothing: a stalled server that runs it late holds and counts nothing.
 * KEYS: key, secrets, rl, credits:<month>. ARGV: sha, expected version, now, window (ms), limit,
 * deadline (server epoch ms; -1: none), then (or nothing, for no hold) reservation id, credit units,
 * cap units (-1: none), hold expiry (ms), forget-expired delay (ms), bucket ttl (ms), minimum credit
 * units (-1: none).
 * Returns {'late'} | {'moving'} (MOVING_LUA: nothing counted) | {'unknown'} | {'revoked'} | {'changed',
 * record flat list} | {'admitted', hits, window ms left[, 1|0, spent, reserved, held units]}.
 */
export const ADMIT = `${DEADLINE_LUA('ARGV[6]', "{'late'}")}${MOVING_LUA('KEYS[4]', "{'moving'}")}
${ADMIT_CHECK_LUA}
local function reserve()
${RESERVE_LUA('KEYS[4]', 'ARGV[7]', 'ARGV[8]', 'ARGV[9]', 'ARGV[3]', 'ARGV[10]', 'ARGV[11]', 'ARGV[12]', 'ARGV[13]')}
end
local held = reserve()
return {'admitted', hits, left, held[1], held[2], held[3], held[4]}
`;

/**
 * Extend a live hold. KEYS: credits:<month>. ARGV: reservation id, now, new expiry (ms).
 * Returns 1 when extended, 0 when the hold is gone or already expired (it is not brought back).
 */
export const RENEW_RESERVATION = `
local field = 'hold:' .. ARGV[1]
local value = redis.call('HGET', KEYS[1], field)
if not value then return 0 end
local sep = string.find(value, ':', 1, true)
local expires = tonumber(string.sub(value, sep + 1))
if expires <= tonumber(ARGV[2]) then return 0 end
if tonumber(ARGV[3]) > expires then
  redis.call('HSET', KEYS[1], field, string.sub(value, 1, sep - 1) .. ':' .. ARGV[3])
end
return 1
`;

/**
 * Settle a reservation once: drop its hold (live or expired) and add the real usage to the month's
 * and the day's totals in this one step, and note the reservation as settled (kept `forget` ms). A
 * reservation noted as settled changes nothing; one with neither a hold nor a note (its hold was lost
 * with a primary that failed before its replica had it) is recorded, since its usage was paid for.
 * On one server the request log record is appended in this same step (a fifth key, the log, and its
 * APPEND_LOG_LUA arguments), so no crash can leave a settlement without its record; in a cluster the
 * log is in another slot, so the record goes into the key's own log outbox in this step (a fifth key,
 * `{<id>}:log-outbox`, a hash: record id -> the APPEND_LOG_LUA arguments as JSON), from which it is
 * moved into the log (MOVE_LOG_RECORD, redis-request-log.ts).
 * KEYS: credits:<month>, usage:<month>, usage-day:<month>, settled[, request-log | log-outbox]. ARGV:
 * reservation id, credit units (credits.ts), model, input, output, cache write, cache read tokens,
 * bucket ttl (ms), day (YYYY-MM-DD), now (ms), forget (ms)[, record JSON, booking ms, oldest id to keep
 * (ms), log ttl (ms) | record id, outbox entry JSON, outbox ttl (ms)]. Returns 1 when recorded, 0 when ignored.
 */
function SETTLE_LUA(people: number): string {
  const log = 5 + people;
  return `
local held = redis.call('HDEL', KEYS[1], 'hold:' .. ARGV[1])
if held == 0 then held = redis.call('HDEL', KEYS[1], 'expired:' .. ARGV[1]) end
if held == 0 and redis.call('ZSCORE', KEYS[4], ARGV[1]) then return 0 end
local now = tonumber(ARGV[10])
redis.call('ZADD', KEYS[4], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[11]))
redis.call('PEXPIRE', KEYS[4], ARGV[11])
redis.call('HINCRBY', KEYS[1], 'spent', ARGV[2])
local fields = {'inputTokens', 'outputTokens', 'cacheCreationInputTokens', 'cacheReadInputTokens'}
local m = ARGV[3] .. '|'
local d = ARGV[9] .. '|' .. ARGV[3] .. '|'
for i = 1, 4 do
  redis.call('HINCRBY', KEYS[2], m .. fields[i], ARGV[3 + i])
  redis.call('HINCRBY', KEYS[3], d .. fields[i], ARGV[3 + i])
end
redis.call('HINCRBY', KEYS[2], m .. 'credits', ARGV[2])
redis.call('HINCRBY', KEYS[2], m .. 'requests', 1)
redis.call('HINCRBY', KEYS[3], d .. 'credits', ARGV[2])
redis.call('HINCRBY', KEYS[3], d .. 'requests', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[8])
redis.call('PEXPIRE', KEYS[2], ARGV[8])
redis.call('PEXPIRE', KEYS[3], ARGV[8])
${people === 0 ? '' : `for i = 5, ${4 + people} do
  redis.call('HDEL', KEYS[i], 'hold:' .. ARGV[1], 'expired:' .. ARGV[1])
  redis.call('HINCRBY', KEYS[i], 'spent', ARGV[2])
  redis.call('PEXPIRE', KEYS[i], ARGV[8])
end`}
if #KEYS == ${log} and #ARGV == 15 then
${APPEND_LOG_LUA(`KEYS[${log}]`, 'ARGV[12]', 'ARGV[13]', 'ARGV[14]', 'ARGV[15]')}
elseif #KEYS == ${log} then
redis.call('HSET', KEYS[${log}], ARGV[12], ARGV[13])
redis.call('PEXPIRE', KEYS[${log}], ARGV[14])
end
return 1
`;
}

export const SETTLE_CREDITS = SETTLE_LUA(0);
/** SETTLE_CREDITS of a team key: its team's ledger (KEYS[5]) settles in the same step. */
export const SETTLE_IN_TEAM = SETTLE_LUA(1);
/** SETTLE_CREDITS of a team key with an owner: its member's (KEYS[5]) and team's (KEYS[6]) ledgers too. */
export const SETTLE_IN_TEAM_AS_MEMBER = SETTLE_LUA(2);



/**
 * Lua that appends a request log record, with an id at its booking ms, or at the newest entry's ms
 * when that is later (another instance's clock ahead of ours): stream ids must grow. So an entry's id
 * is never earlier than its record's time; readers scan a little past the end of a range. The
 * arguments are Lua expressions: the log, the record JSON, booking ms, oldest id to keep (ms), ttl (ms).
 */
function APPEND_LOG_LUA(log: string, json: string, booking: string, oldest: string, ttl: string): string {
  return `
local logId = ${booking}
local top = redis.call('XREVRANGE', ${log}, '+', '-', 'COUNT', 1)
if #top > 0 then
  local topMs = string.match(top[1][1], '^(%d+)')
  if tonumber(topMs) > tonumber(logId) then logId = topMs end
end
redis.call('XADD', ${log}, 'MINID', '~', ${oldest}, logId .. '-*', 'r', ${json})
redis.call('PEXPIRE', ${log}, ${ttl})`;
}

/** Append a request log record (APPEND_LOG_LUA). KEYS: request-log. ARGV: record JSON, booking ms, oldest id to keep (ms), ttl (ms). */
export const APPEND_REQUEST_LOG = `${APPEND_LOG_LUA('KEYS[1]', 'ARGV[1]', 'ARGV[2]', 'ARGV[3]', 'ARGV[4]')}
return 1
`;

/**
 * Move one record from a key's log outbox into the request log, once: a record id already moved
 * (noted in `moved`, a sorted set in the log's slot, kept `forget` ms) is not appended again, so a
 * move repeated after a crash between it and the outbox's HDEL leaves no duplicate.
 * KEYS: request-log, moved. ARGV: record id, record JSON, booking ms, oldest id to keep (ms), log ttl
 * (ms), now (ms), forget (ms). Returns 1 when appended, 0 when it had been.
 */
export const MOVE_LOG_RECORD = `
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
${APPEND_LOG_LUA('KEYS[1]', 'ARGV[2]', 'ARGV[3]', 'ARGV[4]', 'ARGV[5]')}
local now = tonumber(ARGV[6])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[7]))
redis.call('PEXPIRE', KEYS[2], ARGV[7])
return 1
`;

/**
 * Claim a budget alert: the first claim of an id wins and leaves it pending, due at once.
 * KEYS: {alerts}:fired:<alert id>, {alerts}:due, {alerts}:pending. ARGV: alert id, pending JSON, now, fired ttl (ms).
 * Returns 1 when claimed, 0 when it was claimed before.
 */
export const CLAIM_ALERT = `
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[4]) then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return 1
`;

/**
 * Lease the next due alert: its due time moves to the lease's end, so no other instance takes it
 * meanwhile. KEYS: {alerts}:due, {alerts}:pending. ARGV: now, lease (ms). Returns the pending JSON, or nil.
 */
export const LEASE_ALERT = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)
if #due == 0 then return nil end
local pending = redis.call('HGET', KEYS[2], due[1])
if not pending then
  redis.call('ZREM', KEYS[1], due[1])
  return nil
end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), due[1])
return pending
`;

/** Put back a pending alert (when still pending). KEYS: {alerts}:due, {alerts}:pending. ARGV: id, pending JSON, due ms. */
export const RETRY_ALERT = `
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`;
