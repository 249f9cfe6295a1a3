/**
 * The names of the Redis store's keys (the layout is described in redis-scripts.ts). Everything that
 * holds one API key's state carries the hash tag `{<key id>}`, so a script that touches it reaches one
 * Redis Cluster slot; budget alerts share the tag `{alerts}`.
 */

/** The version of the layout these names give; redis-migration.ts moves a store from the one before. */
export const REDIS_LAYOUT = '2';

/** How long a month's credit and usage buckets are kept after their last write: 400 days. */
export const BUCKET_RETENTION_MS = 400 * 24 * 60 * 60 * 1000;

/**
 * Where key `id`'s state lives: under its own hash tag `{<id>}`, or, for a key in team `team`, under
 * the team's `{team:<team>}` (`:k:<id>` after it), so a team key's admission reaches its member's and
 * team's ledgers in the same Redis Cluster slot (redis-team-caps.ts). A key in a team leaves a pointer
 * at `{<id>}:key` (field `movedTo`: the team) for the calls that know only its id.
 */
function keyTag(id: string, team: string | null | undefined): string {
  return team ? `{team:${team}}:k:${id}` : `{${id}}`;
}

export class RedisKeys {
  /**
   * @param prefix prefix of every key (`REDIS_PREFIX`)
   * @throws Error when the prefix holds `{` or `}` (it would become the hash tag of every key)
   */
  constructor(readonly prefix: string) {
    if (/[{}]/.test(prefix)) throw new Error(`REDIS_PREFIX "${prefix}" must not contain "{" or "}" (Redis Cluster reads them as a hash tag)`);
  }

  /** The key record hash of key `id`. */
  key(id: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:key`;
  }

  /** Secret sha256 -> state, of key `id`. */
  secrets(id: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:secrets`;
  }

  /** The credit bucket (spent and holds) of key `id` in `month` (YYYY-MM). */
  credits(id: string, month: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:credits:${month}`;
  }

  /** Usage totals per model of key `id` in `month`. */
  usage(id: string, month: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:usage:${month}`;
  }

  /** Usage totals per day and model of key `id` in `month`. */
  usageDay(id: string, month: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:usage-day:${month}`;
  }

  /** Reservations of key `id` settled lately (so a settlement whose hold was lost is told from a repeat). */
  settled(id: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:settled`;
  }

  /** The rate-limit window counter of key `id`. */
  rate(id: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:rl`;
  }

  /**
   * The month ledger (`spent`, holds) of team `team`, under the team's hash tag (people-caps.ts): a
   * team key's admission holds its credits here and in its member's ledger in the same script.
   */
  teamCredits(team: string, month: string): string {
    return `${this.prefix}{team:${team}}:credits:${month}`;
  }

  /** The month ledger of member `owner` (an OIDC subject) of team `team`, under the team's hash tag. */
  memberCredits(team: string, owner: string, month: string): string {
    return `${this.prefix}{team:${team}}:member:${encodeURIComponent(owner)}:${month}`;
  }

  /**
   * A move of key `id`'s state under way (redis-key-move.ts: JSON `{from, to, step}`), under the key's
   * own tag beside its pointer, until the move is done.
   */
  move(id: string): string {
    return `${this.prefix}{${id}}:move`;
  }

  /** The lease lock of a change of key `id`'s team (redis-key-move-lock.ts: a random token), beside its move. */
  moveLock(id: string): string {
    return `${this.prefix}{${id}}:move-lock`;
  }

  /** Secret sha256 -> key id. */
  secret(sha256: string): string {
    return `${this.prefix}secret:${sha256}`;
  }

  /** The set of key ids. */
  get keys(): string {
    return `${this.prefix}keys`;
  }

  get requestLog(): string {
    return `${this.prefix}request-log`;
  }

  /** A key's request log outbox (redis-request-log.ts), in the key's slot (its team's for a team key). */
  logOutbox(id: string, team?: string | null): string {
    return `${this.prefix}${keyTag(id, team)}:log-outbox`;
  }

  /**
   * The record ids moved from outboxes into the request log, in the log's slot: its hash tag is the
   * log's whole name (a name without braces is hashed whole), so one script touches both.
   */
  get logMoved(): string {
    return `${this.prefix}{${this.requestLog}}:moved`;
  }

  alertFired(alertId: string): string {
    return `${this.prefix}{alerts}:fired:${alertId}`;
  }

  get alertsDue(): string {
    return `${this.prefix}{alerts}:due`;
  }

  get alertsPending(): string {
    return `${this.prefix}{alerts}:pending`;
  }

  /** A pinned upstream object (a message batch, a file). */
  pin(kind: string, id: string): string {
    return `${this.prefix}pin:${kind}:${id}`;
  }

  response(id: string): string {
    return `${this.prefix}response:${id}`;
  }

  /** Bytes of stored responses a key saved within the response time to live (a counter). */
  responseBytes(keyId: string): string {
    return `${this.prefix}response-bytes:${keyId}`;
  }

  /** The layout marker. */
  get layout(): string {
    return `${this.prefix}layout`;
  }
}
