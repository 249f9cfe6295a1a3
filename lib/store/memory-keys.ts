/**
 * The memory store's keys: records and secrets (hashes only), their lookup by a secret's hash, and the
 * key administration calls (create, update, rotate, replace a secret). MemoryStore adds the ledger,
 * admission, pins and stored responses on top.
 */
import { MemorySpendStore } from './memory-spend';
import { copyRecord, type StoredKey } from './memory-key-records';
import { createKeyRecord, type KeyPatch, type KeyRecord, type KeySecret, type NewKey } from './types';
import { revokedIsDerived } from './records';

export abstract class MemoryKeyStore extends MemorySpendStore {
  protected readonly keys = new Map<string, StoredKey>();
  /** secret sha256 -> key id */
  protected readonly secretIndex = new Map<string, string>();

  /**
   * Runs synchronously after a key is created, changed (revoked, limits) or rotated, before the call
   * resolves: the state file is written there (memory-persistence.ts), so a change is on disk before
   * the admin call that made it answers.
   */
  onKeysChanged?: () => void;
  /** Counts settlements and key changes: the state file is flushed when it moved (memory-persistence.ts). */
  changes = 0;

  protected keysChanged(): void {
    this.changes += 1;
    this.onKeysChanged?.();
  }

  /** The key one of whose live secrets hashes to `sha256`. */
  protected findStoredNow(sha256: string, now: number): StoredKey | null {
    const id = this.secretIndex.get(sha256);
    const stored = id === undefined ? undefined : this.keys.get(id);
    if (!stored) return null;
    // The index lookup above already matched this hash exactly (and a hash of a secret gives an
    // attacker nothing to time): plain equality finds which of the key's secrets it is.
    const secret = stored.secrets.find((s) => s.sha256 === sha256);
    if (!secret || (secret.expiresAt !== null && secret.expiresAt <= now)) return null;
    return stored;
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const stored = this.keys.get(id);
    return stored ? copyRecord(stored.record) : null;
  }

  async listKeys(): Promise<KeyRecord[]> {
    return [...this.keys.values()].map((stored) => copyRecord(stored.record));
  }

  async createKey(input: NewKey): Promise<KeyRecord> {
    if (this.keys.has(input.id)) throw new Error(`key "${input.id}" already exists`);
    if (this.secretIndex.has(input.secret.sha256)) throw new Error('that secret is already in use');
    const record = createKeyRecord(input, this.clock());
    this.keys.set(input.id, { record, secrets: [{ ...input.secret }] });
    this.secretIndex.set(input.secret.sha256, input.id);
    this.keysChanged();
    return copyRecord(record);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord> {
    const stored = this.requireKey(id);
    stored.view = undefined;
    stored.version = (stored.version ?? 0) + 1;
    const record = stored.record;
    const derive = revokedIsDerived(patch);
    // A record from before run-time revocations were kept apart: its revocation is a run-time one unless the file's.
    if (derive && record.revokedAtRunTime === undefined) record.revokedAtRunTime = record.revoked && record.fileRevoked !== true;
    for (const [field, value] of Object.entries(patch)) {
      if (value !== undefined) (record as unknown as Record<string, unknown>)[field] = Array.isArray(value) ? [...value] : value;
    }
    if (derive) record.revoked = record.fileRevoked === true || record.revokedAtRunTime === true;
    this.keysChanged();
    return copyRecord(stored.record);
  }

  async rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now = this.clock()): Promise<KeyRecord> {
    const stored = this.requireKey(id);
    if (this.secretIndex.has(secret.sha256)) throw new Error('that secret is already in use');
    for (const old of stored.secrets) {
      if (old.expiresAt === null) old.expiresAt = now + graceMs;
    }
    stored.secrets = stored.secrets.filter((old) => {
      const live = old.expiresAt === null || old.expiresAt > now;
      if (!live) this.secretIndex.delete(old.sha256);
      return live;
    });
    stored.secrets.push({ ...secret, expiresAt: null });
    stored.record.last4 = last4;
    stored.view = undefined;
    stored.version = (stored.version ?? 0) + 1;
    this.secretIndex.set(secret.sha256, id);
    this.keysChanged();
    return copyRecord(stored.record);
  }

  async replaceSecret(id: string, secret: KeySecret, last4: string): Promise<boolean> {
    const stored = this.requireKey(id);
    const owner = this.secretIndex.get(secret.sha256);
    if (owner !== undefined && owner !== id) throw new Error('that secret is already in use');
    // Already the current secret: only other current secrets go; one in its rotation grace keeps it.
    const isCurrent = stored.secrets.some((old) => old.sha256 === secret.sha256 && old.expiresAt === null);
    const dropped = stored.secrets.filter((old) => old.sha256 !== secret.sha256 && (!isCurrent || old.expiresAt === null));
    if (isCurrent && dropped.length === 0) return false;
    for (const old of dropped) this.secretIndex.delete(old.sha256);
    stored.secrets = isCurrent ? stored.secrets.filter((old) => !dropped.includes(old)) : [{ sha256: secret.sha256, expiresAt: null }];
    this.secretIndex.set(secret.sha256, id);
    stored.record.last4 = last4;
    stored.view = undefined;
    stored.version = (stored.version ?? 0) + 1;
    this.keysChanged();
    return true;
  }

  protected requireKey(id: string): StoredKey {
    const stored = this.keys.get(id);
    if (!stored) throw new Error(`key "${id}" does not exist`);
    return stored;
  }
}
