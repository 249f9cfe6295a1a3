/**
 * The Lua scripts of the Redis store that read and change a key's record and secrets (redis-scripts.ts
 * describes the layout and why each script touches one key's slot only).
 */

/**
 * Read a key and the state of one of its secrets. KEYS: key, secrets. ARGV: sha.
 * Returns nil, {record hash as a flat field/value list (with `version`), this secret's state}, or
 * {'moved', team} for the pointer a key in a team leaves under its own tag (redis-key-move.ts).
 */
export const FIND_KEY = `
local record = redis.call('HGETALL', KEYS[1])
if #record == 0 then return nil end
local moved = redis.call('HGET', KEYS[1], 'movedTo')
if moved then return {'moved', moved} end
local secret = redis.call('HGET', KEYS[2], ARGV[1])
if not secret then return nil end
return {record, secret}
`;

/**
 * Create a key (its secret's index entry `secret:<sha>` is set by the caller first, as it lives in
 * another slot). KEYS: key, secrets. ARGV: sha, then the record as field/value pairs.
 * Returns 1 when created; errors `exists`.
 */
export const CREATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('exists') end
local fields = {}
for i = 2, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], 'version', '0', unpack(fields))
redis.call('HSET', KEYS[2], ARGV[1], 'current')
return 1
`;

/**
 * Update record fields of an existing key, one more version. KEYS: key. ARGV: field/value pairs
 * (JSON-encoded values). A patch that sets `fileRevoked` or `revokedAtRunTime` without `revoked` has
 * `revoked` derived here, from the record as it is now (records.ts, revokedIsDerived).
 * Returns the record as a flat list; errors `missing`.
 */
export const UPDATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('missing') end
local setsRevoked, setsParts = false, false
for i = 1, #ARGV, 2 do
  if ARGV[i] == 'revoked' then setsRevoked = true
  elseif ARGV[i] == 'fileRevoked' or ARGV[i] == 'revokedAtRunTime' then setsParts = true end
end
local derive = setsParts and not setsRevoked
if derive and redis.call('HEXISTS', KEYS[1], 'revokedAtRunTime') == 0 then
  local atRunTime = redis.call('HGET', KEYS[1], 'revoked') == 'true' and redis.call('HGET', KEYS[1], 'fileRevoked') ~= 'true'
  redis.call('HSET', KEYS[1], 'revokedAtRunTime', atRunTime and 'true' or 'false')
end
if #ARGV > 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
if derive then
  local revoked = redis.call('HGET', KEYS[1], 'fileRevoked') == 'true' or redis.call('HGET', KEYS[1], 'revokedAtRunTime') == 'true'
  redis.call('HSET', KEYS[1], 'revoked', revoked and 'true' or 'false')
end
redis.call('HINCRBY', KEYS[1], 'version', 1)
return redis.call('HGETALL', KEYS[1])
`;

/**
 * Rotate: the current secret(s) expire `grace` ms from `now`, expired secrets are dropped, the new
 * secret becomes current, one more version. KEYS: key, secrets. ARGV: new sha, last4 (JSON-encoded),
 * now, grace. The caller sets the new secret's index entry first, and afterwards gives the index
 * entries of the secrets returned an expiry or deletes them (they live in other slots).
 * Returns {record as a flat list, shas now expiring, shas dropped}; errors `missing`.
 */
export const ROTATE_KEY = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('missing') end
local now = tonumber(ARGV[3])
local expiresAt = now + tonumber(ARGV[4])
local expiring, dropped = {}, {}
local secrets = redis.call('HGETALL', KEYS[2])
for i = 1, #secrets, 2 do
  local sha, state = secrets[i], secrets[i + 1]
  if state == 'current' then
    redis.call('HSET', KEYS[2], sha, tostring(expiresAt))
    expiring[#expiring + 1] = sha
  elseif tonumber(state) <= now then
    redis.call('HDEL', KEYS[2], sha)
    dropped[#dropped + 1] = sha
  end
end
redis.call('HSET', KEYS[2], ARGV[1], 'current')
redis.call('HSET', KEYS[1], 'last4', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'version', 1)
return {redis.call('HGETALL', KEYS[1]), expiring, dropped}
`;

/**
 * Make one secret a key's only one, at once (a declared key whose secret config.json replaced): every
 * other secret goes, this one is current, `last4` set, one more version when the secrets changed.
 * When it is the current secret already, only other current secrets go: one in its rotation grace
 * (rotated at run time before the key was declared) keeps its expiry. The
 * caller claims the new secret's index entry first and deletes those of the secrets returned.
 * KEYS: key, secrets. ARGV: sha, last4 (JSON-encoded). Returns {1|0 changed, shas dropped}; errors `missing`.
 */
export const REPLACE_SECRET = `
if redis.call('EXISTS', KEYS[1]) == 0 then return redis.error_reply('missing') end
local changed = 0
local dropped = {}
-- Already the current secret: only other current secrets go; one in its rotation grace keeps it.
local isCurrent = redis.call('HGET', KEYS[2], ARGV[1]) == 'current'
local secrets = redis.call('HGETALL', KEYS[2])
for i = 1, #secrets, 2 do
  if secrets[i] ~= ARGV[1] and (not isCurrent or secrets[i + 1] == 'current') then
    redis.call('HDEL', KEYS[2], secrets[i])
    dropped[#dropped + 1] = secrets[i]
    changed = 1
  end
end
if not isCurrent then changed = 1 end
if changed == 1 then
  redis.call('HSET', KEYS[2], ARGV[1], 'current')
  redis.call('HSET', KEYS[1], 'last4', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'version', 1)
end
return {changed, dropped}
`;
