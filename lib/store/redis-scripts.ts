/**
 * The Lua scripts of the Redis store. Each runs atomically on the server, so a check and the write
 * that depends on it can never be split by another instance's request.
 *
 * Layout under the store's prefix P (values are strings):
 * - `P keys`                    set of key ids
 * - `P key:<id>`                hash: the key record, one field per record field, each JSON-encoded
 * - `P secrets:<id>`            hash: secret sha256 -> `current`, or the epoch ms it expires at
 * - `P secret:<sha256>`         the key id a secret belongs to (expires with a rotated-out secret)
 * - `P credits:<id>:<YYYY-MM>`  hash: `spent` (credit units (credits.ts) settled this UTC month),
 *                               `hold:<reservation id>` = `<units>:<expires at ms>` (in flight),
 *                               `expired:<reservation id>` = `<forget at ms>` (outlived its hold)
 * - `P usage:<id>:<YYYY-MM>`    hash: `<model>|<field>` -> integer totals (tokens, credit units (credits.ts), requests)
 * - `P rl:<id>`                 rate-limit window counter (rate-limit-redis)
 * - `P usage-day:<id>:<YYYY-MM>` hash: `<YYYY-MM-DD>|<model>|<field>` -> integer totals of one UTC day
 * - `P request-log`             stream: one entry per request that reached the upstream, field `r` =
 *                               the record's values as a JSON array (redis-spend.ts); ids are
 *                               `<booking ms>-<seq>`, trimmed by age (MINID)
 * - `P alert-fired:<alert id>`  set once when a budget alert is claimed (never again that month)
 * - `P alerts-due`              sorted set: pending alert id -> epoch ms it is due (or its lease ends)
 * - `P alerts`                  hash: pending alert id -> `{alert, attempts}` as JSON
 *
 * The month is part of the bucket's name, so a new month starts from zero by itself.
 */

/**
 * Find a key by a secret hash. KEYS: secret:<sha>. ARGV: prefix, sha.
 * Returns nil, or {record hash as a flat field/value list, this secret's entry in secrets:<id>}.
 */
export const FIND_KEY = `
local id = redis.call('GET', KEYS[1])
if not id then return nil end
local record = redis.call('HGETALL', ARGV[1] .. 'key:' .. id)
if #record == 0 then return nil end
local secret = redis.call('HGET', ARGV[1] .. 'secrets:' .. id, ARGV[2])
if not secret then return nil end
return {record, secret}
`;

/**
 * Create a key. KEYS: key:<id>, secrets:<id>, secret:<sha>, keys. ARGV: id, sha, onlyIfAbsent (1/0),
 * then the record as field/value pairs.
 * Returns 1 when created, 0 when the id exists and onlyIfAbsent; errors `exists` / `secret in use`.
 */
export const CREATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[3] == '1' then return 0 end
  return redis.error_reply('exists')
end
if redis.call('EXISTS', KEYS[3]) == 1 then return redis.error_reply('secret in use') end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('HSET', KEYS[2], ARGV[2], 'current')
redis.call('SET', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
return 1
`;

/**
 * Update record fields of an existing key. KEYS: key:<id>. ARGV: field/value pairs.
 * Returns the record as a flat list; errors `missing`.
 */
export const UPDATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('missing') end
if #ARGV > 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1])
`;

/**
 * Rotate: the current secret(s) expire `grace` ms from `now`, expired secrets are dropped, the new
 * secret becomes current. KEYS: key:<id>, secrets:<id>, secret:<new sha>. ARGV: prefix, id, new sha,
 * last4 (JSON-encoded), now, grace.
 * Returns the record as a flat list; errors `missing` / `secret in use`.
 */
export const ROTATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('missing') end
if redis.call('EXISTS', KEYS[3]) == 1 then return redis.error_reply('secret in use') end
local now = tonumber(ARGV[5])
local expiresAt = now + tonumber(ARGV[6])
local secrets = redis.call('HGETALL', KEYS[2])
for i = 1, #secrets, 2 do
  local sha, state = secrets[i], secrets[i + 1]
  if state == 'current' then
    redis.call('HSET', KEYS[2], sha, tostring(expiresAt))
    -- Only tidies the index: the expiry itself is checked against the state above. Relative, with a
    -- minute to spare, so a caller's clock that differs from the server's never drops it early.
    redis.call('PEXPIRE', ARGV[1] .. 'secret:' .. sha, tonumber(ARGV[6]) + 60000)
  elseif tonumber(state) <= now then
    redis.call('HDEL', KEYS[2], sha)
    redis.call('DEL', ARGV[1] .. 'secret:' .. sha)
  end
end
redis.call('HSET', KEYS[2], ARGV[3], 'current')
redis.call('SET', KEYS[3], ARGV[2])
redis.call('HSET', KEYS[1], 'last4', ARGV[4])
return redis.call('HGETALL', KEYS[1])
`;

/**
 * Reserve credits against the cap. KEYS: credits:<id>:<month>. ARGV: reservation id, credit units (credits.ts),
 * cap in credit units (credits.ts) (-1: no cap), now, hold expiry (ms), forget-expired delay (ms), bucket ttl (ms).
 * Holds past their expiry stop counting and become `expired:` entries, kept for a late settlement.
 * Returns {1|0, spent, reserved}.
 */
export const RESERVE_CREDITS = `
local now = tonumber(ARGV[4])
local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
local reserved = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local field, value = fields[i], fields[i + 1]
  if string.sub(field, 1, 5) == 'hold:' then
    local sep = string.find(value, ':', 1, true)
    local expires = tonumber(string.sub(value, sep + 1))
    if expires <= now then
      redis.call('HDEL', KEYS[1], field)
      redis.call('HSET', KEYS[1], 'expired:' .. string.sub(field, 6), tostring(now + tonumber(ARGV[6])))
    else
      reserved = reserved + tonumber(string.sub(value, 1, sep - 1))
    end
  elseif string.sub(field, 1, 8) == 'expired:' and tonumber(value) <= now then
    redis.call('HDEL', KEYS[1], field)
  end
end
local credits = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
if cap >= 0 and spent + reserved + credits > cap then return {0, spent, reserved} end
redis.call('HSET', KEYS[1], 'hold:' .. ARGV[1], ARGV[2] .. ':' .. ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return {1, spent, reserved}
`;

/**
 * Extend a live hold. KEYS: credits:<id>:<month>. ARGV: reservation id, now, new expiry (ms).
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
 * and the day's totals, and append the request log record, all in this one step; a reservation with
 * no hold left was settled already and changes nothing. KEYS: credits:<id>:<month>, usage:<id>:<month>,
 * usage-day:<id>:<month>, request-log. ARGV: reservation id, credit units (credits.ts), model, input,
 * output, cache write, cache read tokens, bucket ttl (ms), day (YYYY-MM-DD), log record JSON ('' for
 * none), booking ms, oldest log id to keep (ms), log ttl (ms). Returns 1 when recorded, 0 when ignored.
 */
export const SETTLE_CREDITS = `
local held = redis.call('HDEL', KEYS[1], 'hold:' .. ARGV[1])
if held == 0 then held = redis.call('HDEL', KEYS[1], 'expired:' .. ARGV[1]) end
if held == 0 then return 0 end
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
if ARGV[10] ~= '' then
${APPEND_LOG_LUA('KEYS[4]', 'ARGV[11]', 'ARGV[10]', 'ARGV[12]', 'ARGV[13]')}
end
return 1
`;

/**
 * Lua that appends a record to the request log stream with an id at its booking ms, or at the newest
 * entry's ms when that is later (another instance's clock ahead of ours): stream ids must grow. So an
 * entry's id is never earlier than its record's time; readers scan a little past the end of a range.
 */
function APPEND_LOG_LUA(stream: string, ms: string, json: string, minId: string, ttl: string): string {
  return `
  local id = ${ms}
  local top = redis.call('XREVRANGE', ${stream}, '+', '-', 'COUNT', 1)
  if #top > 0 then
    local topMs = string.match(top[1][1], '^(%d+)')
    if tonumber(topMs) > tonumber(id) then id = topMs end
  end
  redis.call('XADD', ${stream}, 'MINID', '~', ${minId}, id .. '-*', 'r', ${json})
  redis.call('PEXPIRE', ${stream}, ${ttl})`;
}

/** Append a request log record. KEYS: request-log. ARGV: record JSON, booking ms, oldest id to keep (ms), ttl (ms). */
export const APPEND_REQUEST_LOG = `
${APPEND_LOG_LUA('KEYS[1]', 'ARGV[2]', 'ARGV[1]', 'ARGV[3]', 'ARGV[4]')}
return 1
`;

/**
 * Claim a budget alert: the first claim of an id wins and leaves it pending, due at once.
 * KEYS: alert-fired:<alert id>, alerts-due, alerts. ARGV: alert id, pending JSON, now, fired ttl (ms).
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
 * meanwhile. KEYS: alerts-due, alerts. ARGV: now, lease (ms). Returns the pending JSON, or nil.
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

/** Put back a pending alert (when still pending). KEYS: alerts-due, alerts. ARGV: id, pending JSON, due ms. */
export const RETRY_ALERT = `
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`;
