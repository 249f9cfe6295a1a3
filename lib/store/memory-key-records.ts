/**
 * The memory store's key records and snapshot shape: a key as the store holds it (its record, secrets
 * and the frozen copy handed to requests), the plain JSON of a snapshot (the state file), and the record
 * copies both use.
 */
import type { MemoryPeopleSnapshot } from './memory-people';
import type { MemoryTeamSnapshot } from './memory-teams';
import type { MemorySpendSnapshot } from './memory-spend';
import type { MemoryAuditSnapshot } from '../audit/memory-audit-log';
import type { KeyRecord, KeySecret, KeySnapshot, PinnedObject, UsageTotals } from './types';

export interface StoredKey {
  record: KeyRecord;
  secrets: KeySecret[];
  /**
   * A frozen copy of `record` handed to the auth step, made once and shared by every request until
   * the record changes (every write to `record` clears it), instead of a copy per request.
   */
  view?: Readonly<KeyRecord>;
  /** Changes to `record` so far (the admission step checks a snapshot against it). */
  version?: number;
}

/** What `snapshot()` returns and `restore()` takes: plain JSON. Holds of requests in flight are not kept (those of batches are). */
export interface MemorySnapshot {
  version: 1;
  keys: StoredKey[];
  /** `${keyId}|${month}` -> settled credit units */
  spend: Record<string, number>;
  /** `${keyId}|${month}|${model}` -> totals, credits in credit units */
  ledger: Record<string, UsageTotals>;
  /** Spend state (days, request log, alerts); absent in files written before it existed. */
  spendState?: Partial<MemorySpendSnapshot>;
  /**
   * Pins (message batches, files) with their expiry: a batch not yet billed keeps its holds across a
   * restart, so it is billed once its results are read. Absent in files written before it existed.
   */
  pins?: Array<{ pin: PinnedObject; expiresAt: number }>;
  /** The audit log (lib/audit/): its entries and head. Absent in files written before it existed. */
  audit?: MemoryAuditSnapshot;
  /** The people role's users, sessions and members added by email. Absent in files written before it existed. */
  people?: MemoryPeopleSnapshot;
  /** The team role's teams made through the admin API and members' own caps. Absent in files written before it existed. */
  teams?: MemoryTeamSnapshot;
}

/** The record handed to requests (one frozen copy until the record changes) and its version. */
export function snapshotOf(stored: StoredKey): KeySnapshot {
  return { key: (stored.view ??= freezeRecord(copyRecord(stored.record))), version: stored.version ?? 0 };
}

export function freezeRecord(record: KeyRecord): Readonly<KeyRecord> {
  if (record.allowedModels) Object.freeze(record.allowedModels);
  if (record.alertThresholds) Object.freeze(record.alertThresholds);
  return Object.freeze(record);
}

export function copyRecord(record: KeyRecord): KeyRecord {
  const copy = { ...record, allowedModels: record.allowedModels ? [...record.allowedModels] : null };
  if (record.alertThresholds) copy.alertThresholds = [...record.alertThresholds];
  return copy;
}

export function emptyTotals(model: string): UsageTotals {
  return { model, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, requests: 0 };
}
