/**
 * The Redis store's audit log: a list of entries (JSON, in id order) and a head hash (`id`, `hash`),
 * both under the hash tag `{audit}` so each script reaches one Redis Cluster slot. Redis's Lua has no
 * SHA-256 (only `redis.sha1hex`), so the entry is sealed here and the script appends it only onto the
 * head it was sealed after: it reads the head and appends in one atomic step, or answers the head it
 * found (another instance appended first) and the entry is sealed again after that one.
 */
import { sealAuditEntry } from './audit-chain';
import type { AuditDraft, AuditEntry, AuditHead } from './audit-types';
import type { RedisConnection } from '../store/redis-connection';
import type { Clock } from '../store/month';

/**
 * KEYS: the list, the head. ARGV: the head id the entry was sealed after (0: none), the entry (JSON),
 * its id, its hash. Returns {1} when appended, else {0, head id, head hash}.
 */
const APPEND_AUDIT = `
local id = tonumber(redis.call('HGET', KEYS[2], 'id') or '0')
if id ~= tonumber(ARGV[1]) then return {0, id, redis.call('HGET', KEYS[2], 'hash') or ''} end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'id', ARGV[3], 'hash', ARGV[4])
return {1}
`;

/** KEYS: the list. ARGV: first index, last index (LRANGE's, inclusive). */
const READ_AUDIT = `return redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])`;

/** KEYS: the head. Returns {id, hash}, or {} when the log is empty. */
const READ_HEAD = `
local id = redis.call('HGET', KEYS[1], 'id')
if not id then return {} end
return {id, redis.call('HGET', KEYS[1], 'hash')}
`;

/** Appends tried before giving up when other instances keep appending first (each loses only to a success). */
const MAX_APPEND_ATTEMPTS = 100;

export class RedisAuditLog {
  private readonly list: string;
  private readonly headKey: string;
  /** The head as this instance last saw it: an append usually needs no read first. */
  private knownHead: AuditHead | null | undefined;

  /** @param prefix the store's key prefix (`REDIS_PREFIX`, no braces) */
  constructor(private readonly connection: RedisConnection, prefix: string, private readonly clock: Clock) {
    this.list = `${prefix}{audit}:entries`;
    this.headKey = `${prefix}{audit}:head`;
  }

  /**
   * Append `draft` after the log's head, as one chain with every other instance's appends.
   * @throws Error when Redis fails, or after MAX_APPEND_ATTEMPTS lost races
   */
  async append(draft: AuditDraft): Promise<AuditEntry> {
    let head = this.knownHead === undefined ? await this.readHead() : this.knownHead;
    for (let attempt = 0; attempt < MAX_APPEND_ATTEMPTS; attempt++) {
      const entry = sealAuditEntry(draft, head, this.clock());
      const reply = (await this.connection.run(APPEND_AUDIT, [this.list, this.headKey],
        [String(head?.id ?? 0), JSON.stringify(entry), String(entry.id), entry.hash])) as Array<number | string>;
      if (Number(reply[0]) === 1) {
        this.knownHead = { id: entry.id, hash: entry.hash };
        return entry;
      }
      head = Number(reply[1]) === 0 ? null : { id: Number(reply[1]), hash: String(reply[2]) };
    }
    this.knownHead = undefined;
    throw new Error(`audit entry not appended: other instances appended first ${MAX_APPEND_ATTEMPTS} times running`);
  }

  /** The entries at positions `after + 1` on (ids, in an untouched log), at most `limit`. */
  async read(after: number, limit: number): Promise<AuditEntry[]> {
    if (limit < 1) return [];
    const start = Math.max(0, Math.floor(after));
    const texts = (await this.connection.run(READ_AUDIT, [this.list], [String(start), String(start + Math.floor(limit) - 1)])) as string[];
    return texts.map(parseEntry);
  }

  async readHead(): Promise<AuditHead | null> {
    const reply = (await this.connection.run(READ_HEAD, [this.headKey], [])) as string[];
    return reply.length === 0 ? null : { id: Number(reply[0]), hash: reply[1] };
  }
}

/** A stored entry; one that is not JSON (edited by hand) has id NaN, which the verifier reports as broken. */
function parseEntry(text: string): AuditEntry {
  try {
    return JSON.parse(text) as AuditEntry;
  } catch {
    return { id: Number.NaN, action: 'unreadable' } as AuditEntry;
  }
}
