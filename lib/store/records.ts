/** Key records, secrets and credit reservations: the store's basic values (types.ts has the store itself). */

/** A key as the gateway knows it. Never holds a secret, only hashes of secrets. */
export interface KeyRecord {
  id: string;
  name: string;
  /** Last 4 characters of the newest secret, for display and logs. */
  last4: string;
  /** ISO 8601 creation time. */
  createdAt: string;
  revoked: boolean;
  /** Requests per minute. */
  rateLimitPerMinute: number;
  /** Catalogue IDs the key may use; null means all. */
  allowedModels: string[] | null;
  /** Credits per UTC calendar month; null means no cap. */
  monthlyCreditCap: number | null;
  /** Key group (prefix family); `default` for `sk-cs4-` keys. */
  keyGroup: string;
  /**
   * Budget alert thresholds, percent of `monthlyCreditCap` (e.g. [50, 80, 100]); null or absent: the
   * config's `alerts.thresholds`. Records written before alerts existed have no such field.
   */
  alertThresholds?: number[] | null;
  /**
   * The file that declares this key (`config.json`): its secret, limits and `revoked` follow the file
   * at every start and reload (declared-keys.ts), and the admin API and the CLI refuse to change them.
   * Absent or null: a key made at run time.
   */
  declaredIn?: string | null;
  /** The declaring file's `revoked` (only on declared keys). */
  fileRevoked?: boolean;
  /**
   * Revoked through the admin API or the CLI (kept apart from the file's `revoked`, so no start or
   * reload undoes it; only a restore does). `revoked` is the two together, as the admission reads it.
   */
  revokedAtRunTime?: boolean;
  /** The team the key belongs to (lib/config/people.ts); absent or null: none. */
  team?: string | null;
  /** The user (OIDC subject) the key belongs to; absent or null: none. */
  owner?: string | null;
}

/** A secret of a key: its SHA-256 (hex) and, for a rotated-out secret, when it stops working. */
export interface KeySecret {
  sha256: string;
  /** Epoch ms after which this secret fails; null while it is the current secret. */
  expiresAt: number | null;
}

/** Fields to create a key with; the caller hashes the secret. */
export interface NewKey {
  id: string;
  name?: string;
  secret: KeySecret;
  last4: string;
  rateLimitPerMinute: number;
  allowedModels: string[] | null;
  monthlyCreditCap: number | null;
  revoked?: boolean;
  keyGroup?: string;
  /** ISO time; default now. */
  createdAt?: string;
  /** See KeyRecord. */
  declaredIn?: string;
  fileRevoked?: boolean;
  /** See KeyRecord. */
  team?: string | null;
  owner?: string | null;
}

/** The record a new key starts with: defaults for the optional fields, `createdAt` from `now` (epoch ms). */
export function createKeyRecord(input: NewKey, now: number): KeyRecord {
  return {
    id: input.id,
    name: input.name ?? input.id,
    last4: input.last4,
    createdAt: input.createdAt ?? new Date(now).toISOString(),
    revoked: input.revoked ?? false,
    rateLimitPerMinute: input.rateLimitPerMinute,
    allowedModels: input.allowedModels ? [...input.allowedModels] : null,
    monthlyCreditCap: input.monthlyCreditCap,
    keyGroup: input.keyGroup ?? 'default',
    ...(input.declaredIn === undefined ? {} : { declaredIn: input.declaredIn, fileRevoked: input.fileRevoked ?? false, revokedAtRunTime: false }),
    ...(input.owner ? { owner: input.owner } : {}),
    ...(input.team ? { team: input.team } : {}),
  };
}

export type KeyPatch = Partial<Pick<KeyRecord,
  'name' | 'rateLimitPerMinute' | 'allowedModels' | 'monthlyCreditCap' | 'revoked' | 'alertThresholds' | 'revokedAtRunTime'
  | 'declaredIn' | 'fileRevoked' | 'last4' | 'keyGroup' | 'team' | 'owner'>>;

/**
 * Whether a store derives `revoked` for `patch` in the same atomic step as it writes it: a patch that
 * sets `fileRevoked` or `revokedAtRunTime` without `revoked` (a sync of declared keys). The store then
 * writes `revoked = fileRevoked || revokedAtRunTime` from the record as it is at that moment (a record
 * without `revokedAtRunTime` first gets `revoked && !fileRevoked`), so a revocation made meanwhile
 * (admin API, CLI) is never overwritten by a value computed from an earlier read.
 */
export function revokedIsDerived(patch: KeyPatch): boolean {
  return patch.revoked === undefined && (patch.fileRevoked !== undefined || patch.revokedAtRunTime !== undefined);
}

/** Credits held against a key's monthly cap while a request is in flight. */
export interface Reservation {
  id: string;
  keyId: string;
  /** UTC month bucket, `YYYY-MM`. */
  month: string;
  /** Credits held (the request's worst case). */
  credits: number;
  /**
   * The request holding them, set by the credit step (stores neither need nor keep it): lines about
   * the reservation written later, outside the request's own steps, name it.
   */
  requestId?: string;
  /**
   * The team (and member) whose month ledgers hold the same credits (lib/store/people-caps.ts): set
   * when the hold was taken with a team's caps, so the settlement settles all of them. Absent: the key's only.
   */
  team?: string;
  owner?: string | null;
}

/** The cap a hold is checked against: the key's own, its member's (team and owner) or its team's. */
export type CapLevel = 'key' | 'member' | 'team';

/**
 * A hold's result. Refused: the figures of the cap that stopped it (`limit`, the tightest one that
 * could not take the minimum; `key` when absent), credits.
 */
export type ReserveResult =
  | { ok: true; reservation: Reservation; spent: number }
  | { ok: false; spent: number; reserved: number; cap: number; limit?: CapLevel };
