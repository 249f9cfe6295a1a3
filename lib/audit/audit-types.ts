/**
 * The audit log's values and its store role: one entry per change to keys, teams, sign-ins and the
 * configuration, by every means (admin API and dashboard, the key CLI, config.json at start and
 * reload), chained by SHA-256 so that an edited, removed or reordered entry is found (audit-chain.ts).
 */

/**
 * Who made a change: a signed-in user (the ID token's `sub` and email), the ADMIN_TOKEN holder
 * (`admin-token`), the key command line (`cli`), or config.json at start or reload (`config`).
 */
export type AuditActor = 'admin-token' | 'cli' | 'config' | { subject: string; email: string | null };

/** The object changed, e.g. `{type: 'key', id: 'key_abc'}`, `{type: 'team', id: 'search'}`, `{type: 'config', id: 'config.json'}`. */
export interface AuditObject {
  type: string;
  id: string;
}

/** What a caller records: the change, without its place in the chain. */
export interface AuditDraft {
  actor: AuditActor;
  /** Dotted verb: `key.create`, `key.rotate`, `key.revoke`, `key.restore`, `key.update`, `team.create`, `team.update`, `config.reload`, `signin`, `signin.failed`. */
  action: string;
  object: AuditObject | null;
  /** The team the object belongs to; null when none. */
  team?: string | null;
  /** The changed fields as they were (never a secret nor a secret's hash); null when none. */
  before?: Record<string, unknown> | null;
  /** The changed fields as they are now (never a secret nor a secret's hash); null when none. */
  after?: Record<string, unknown> | null;
  /** The client's address (the admin API's caller); null for the CLI and config. */
  ip?: string | null;
}

/** One entry of the log, as stored and served. */
export interface AuditEntry {
  /** Sequence number, 1 for the first entry, one more for each. */
  id: number;
  /** When it was appended, ISO 8601 (UTC). */
  at: string;
  actor: AuditActor;
  action: string;
  object: AuditObject | null;
  team: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  ip: string | null;
  /** `hash` of the entry before (64 zeros for the first). */
  prevHash: string;
  /** SHA-256 (hex) of the canonical JSON of every other field, prevHash included (audit-chain.ts). */
  hash: string;
}

/** The last entry's id and hash: kept apart from the entries, so that removing the last ones is found too. */
export interface AuditHead {
  id: number;
  hash: string;
}

/** The audit log role of the store: append-only, one chain across every instance sharing the store. */
export interface AuditLogStore {
  /**
   * Append one entry after the last one, atomically: its id, time, prevHash and hash are given here
   * (Redis: a script appends only onto the head it was computed from, retried when another instance
   * appended first, so appends from several instances stay one chain).
   * @returns the entry as stored
   */
  appendAudit(draft: AuditDraft): Promise<AuditEntry>;
  /**
   * The entries at positions `afterId + 1` on, in the order appended, at most `limit`. An entry's id
   * is its position in an untouched log, so `afterId` is the id of the last entry read (a cursor).
   */
  readAudit(afterId: number, limit: number): Promise<AuditEntry[]>;
  /** The head (last id and hash), or null while the log is empty. */
  readAuditHead(): Promise<AuditHead | null>;
}
