/**
 * In-memory store: the embedded default for one process. State is lost with the process unless
 * `snapshot()`/`restore()` are used (the server does so on graceful shutdown; see README).
 */
import crypto from 'node:crypto';
import { digestsEqual } from '../keys';
import type {
  GatewayStore, KeyPatch, KeyRecord, KeySecret, NewKey, Reservation, ReserveResult, UsageEntry, UsageTotals,
} from './types';

interface StoredKey {
  record: KeyRecord;
  secrets: KeySecret[];
}

interface Hold {
  reservation: Reservation;
  expiresAt: number;
}

export class MemoryStore implements GatewayStore {
  readonly kind = 'memory';
  private readonly keys = new Map<string, StoredKey>();
  /** secret sha256 -> key id */
  private readonly secretIndex = new Map<string, string>();
  /** `${keyId}|${month}` -> settled credits */
  private readonly spend = new Map<string, number>();
  /** reservation id -> hold */
  private readonly holds = new Map<string, Hold>();
  /** `${keyId}|${month}|${model}` -> totals */
  private readonly ledger = new Map<string, UsageTotals>();

  constructor(private readonly clock: () => number = Date.now) {}

  async findKeyBySecretHash(sha256: string, now = this.clock()): Promise<KeyRecord | null> {
    const id = this.secretIndex.get(sha256);
    const stored = id === undefined ? undefined : this.keys.get(id);
    if (!stored) return null;
    const secret = stored.secrets.find((s) => digestsEqual(s.sha256, sha256));
    if (!secret || (secret.expiresAt !== null && secret.expiresAt <= now)) return null;
    return { ...stored.record };
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const stored = this.keys.get(id);
    return stored ? { ...stored.record } : null;
  }

  async listKeys(): Promise<KeyRecord[]> {
    return [...this.keys.values()].map((stored) => ({ ...stored.record }));
  }

  async createKey(input: NewKey): Promise<KeyRecord> {
    if (this.keys.has(input.id)) throw new Error(`key "${input.id}" already exists`);
    if (this.secretIndex.has(input.secret.sha256)) throw new Error('that secret is already in use');
    const record: KeyRecord = {
      id: input.id,
      name: input.name ?? input.id,
      last4: input.last4,
      createdAt: input.createdAt ?? new Date(this.clock()).toISOString(),
      revoked: input.revoked ?? false,
      rateLimitPerMinute: input.rateLimitPerMinute,
      allowedModels: input.allowedModels,
      monthlyCreditCap: input.monthlyCreditCap,
      keyGroup: input.keyGroup ?? 'default',
    };
    this.keys.set(input.id, { record, secrets: [{ ...input.secret }] });
    this.secretIndex.set(input.secret.sha256, input.id);
    return { ...record };
  }

  async seedKey(input: NewKey): Promise<void> {
    if (!this.keys.has(input.id)) await this.createKey(input);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord> {
    const stored = this.requireKey(id);
    for (const [field, value] of Object.entries(patch)) {
      if (value !== undefined) (stored.record as unknown as Record<string, unknown>)[field] = value;
    }
    return { ...stored.record };
  }

  async rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now = this.clock()): Promise<KeyRecord> {
    const stored = this.requireKey(id);
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
    this.secretIndex.set(secret.sha256, id);
    return { ...stored.record };
  }

  async reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number): Promise<ReserveResult> {
    const now = this.clock();
    const spent = this.spend.get(`${keyId}|${month}`) ?? 0;
    let reserved = 0;
    for (const [id, hold] of this.holds) {
      if (hold.expiresAt <= now) this.holds.delete(id);
      else if (hold.reservation.keyId === keyId && hold.reservation.month === month) reserved += hold.reservation.credits;
    }
    if (cap !== null && spent + reserved + credits > cap) return { ok: false, spent, reserved, cap };
    const reservation: Reservation = { id: crypto.randomUUID(), keyId, month, credits };
    this.holds.set(reservation.id, { reservation, expiresAt: now + ttlMs });
    return { ok: true, reservation, spent };
  }

  async settleCredits(reservation: Reservation, usage: UsageEntry): Promise<void> {
    if (!this.holds.delete(reservation.id)) {
      // Expired or already settled: a settle is still recorded once, keyed by the reservation id.
      if (this.settled.has(reservation.id)) return;
    }
    this.settled.add(reservation.id);
    const spendKey = `${reservation.keyId}|${reservation.month}`;
    this.spend.set(spendKey, (this.spend.get(spendKey) ?? 0) + usage.credits);
    const ledgerKey = `${reservation.keyId}|${reservation.month}|${usage.model}`;
    const totals = this.ledger.get(ledgerKey) ?? {
      model: usage.model, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, requests: 0,
    };
    totals.inputTokens += usage.inputTokens;
    totals.outputTokens += usage.outputTokens;
    totals.cacheCreationInputTokens += usage.cacheCreationInputTokens;
    totals.cacheReadInputTokens += usage.cacheReadInputTokens;
    totals.credits += usage.credits;
    totals.requests += 1;
    this.ledger.set(ledgerKey, totals);
  }

  private readonly settled = new Set<string>();

  async getMonthSpend(keyId: string, month: string): Promise<number> {
    return this.spend.get(`${keyId}|${month}`) ?? 0;
  }

  async getUsage(keyId: string, month: string): Promise<UsageTotals[]> {
    const prefix = `${keyId}|${month}|`;
    return [...this.ledger.entries()].filter(([k]) => k.startsWith(prefix)).map(([, v]) => ({ ...v }));
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  private requireKey(id: string): StoredKey {
    const stored = this.keys.get(id);
    if (!stored) throw new Error(`key "${id}" does not exist`);
    return stored;
  }
}
