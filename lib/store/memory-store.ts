/**
 * In-memory store: the embedded default for one process. Nothing here is shared between processes,
 * so several instances need the Redis store. The server writes `snapshot()` to a file after every key
 * change, every second while spend changes and on graceful shutdown, and `restore()`s it at start
 * (see memory-persistence.ts).
 *
 * Each call a request makes (key lookup, admission, credit reservation, renewal, settlement) does its
 * work at once, in one synchronous step no other request interleaves with (as a Redis script is), and
 * answers at the end of the event loop's turn (`answer`, lib/http/turn.ts), as a network store's
 * replies arrive: the requests of one turn then go on together (bench/RESULTS.md, "Mechanisms kept
 * for speed").
 *
 * Credits are held in integer credit units (credits.ts) so the cap comparison is exact.
 */
import crypto from 'node:crypto';
import { checkSettledFigures, fromCreditUnits, toCreditUnits, toCreditUnitsCeil } from './credits';
import { addToTotals, MemorySpendStore } from './memory-spend';
import { systemClock, type Clock } from './month';
import { MemoryReservations } from './memory-reservations';
import { MemoryRateWindows } from './memory-rate-windows';
import { MemoryResponses } from './memory-responses';
import { bookingTime, utcDay } from './usage-days';
import { atEndOfTurn } from '../http/turn';
import { copyRecord, emptyTotals, snapshotOf, type MemorySnapshot, type StoredKey } from './memory-key-records';
import {
  createKeyRecord,
  type AdmissionRequest, type AdmissionResult, type GatewayStore, type KeyPatch, type KeySnapshot, type KeyRecord, type KeySecret, type NewKey, type Reservation, type ReserveResult,
  type PinnedObject, type StoredResponse, type UsageEntry, type UsageTotals,
} from './types';

export type { MemorySnapshot } from './memory-key-records';

export class MemoryStore extends MemorySpendStore implements GatewayStore {
  readonly kind = 'memory';
  private readonly keys = new Map<string, StoredKey>();
  /** secret sha256 -> key id */
  private readonly secretIndex = new Map<string, string>();
  /** `${keyId}|${month}` -> settled credit units */
  private readonly spend = new Map<string, number>();
  /** Credit reservations of requests in flight, per `${keyId}|${month}`. */
  private readonly reservations = new MemoryReservations();
  /** `${keyId}|${month}|${model}` -> totals (credits in credit units) */
  private readonly ledger = new Map<string, UsageTotals>();
  private readonly responses = new MemoryResponses(() => this.clock());
  private readonly pins = { batch: new MemoryResponses<PinnedObject>(() => this.clock(), Infinity, Infinity), file: new MemoryResponses<PinnedObject>(() => this.clock(), Infinity, Infinity) };
  private readonly rateWindows = new MemoryRateWindows();

  /**
   * Runs synchronously after a key is created, changed (revoked, limits) or rotated, before the call
   * resolves: the state file is written there (memory-persistence.ts), so a change is on disk before
   * the admin call that made it answers.
   */
  onKeysChanged?: () => void;
  /** Counts settlements and key changes: the state file is flushed when it moved (memory-persistence.ts). */
  changes = 0;

  constructor(clock: Clock = systemClock) {
    super(clock);
  }

  /**
   * Runs `work` now, in one synchronous step, and answers its result at the end of the event loop's
   * turn (lib/http/turn.ts), as a network store's reply arrives. A throw rejects the answer at once.
   */
  private async answer<T>(work: () => T): Promise<T> {
    return atEndOfTurn(work());
  }

  private keysChanged(): void {
    this.changes += 1;
    this.onKeysChanged?.();
  }

  findKeyBySecretHash(sha256: string, now = this.clock()): Promise<KeyRecord | null> {
    return this.answer(() => this.identifyNow(sha256, now)?.key ?? null);
  }

  /** Always the record as it is now (`fresh` changes nothing here). */
  identifyKey(sha256: string, now: number, _fresh?: boolean): Promise<KeySnapshot | null> {
    return this.answer(() => this.identifyNow(sha256, now));
  }

  private identifyNow(sha256: string, now: number): KeySnapshot | null {
    const stored = this.findStoredNow(sha256, now);
    return stored ? snapshotOf(stored) : null;
  }

  /** Check, count and hold in one synchronous step, as the Redis script does (GatewayStore.admit). */
  admit(request: AdmissionRequest): Promise<AdmissionResult> {
    return this.answer(() => this.admitNow(request));
  }

  private admitNow(request: AdmissionRequest): AdmissionResult {
    const { snapshot, now } = request;
    const stored = this.findStoredNow(request.secretSha256, now);
    if (!stored || stored.record.id !== snapshot.key.id) return { outcome: 'refused', reason: 'unknown' };
    if ((stored.version ?? 0) !== snapshot.version) return { outcome: 'changed', snapshot: snapshotOf(stored) };
    if (stored.record.revoked) return { outcome: 'refused', reason: 'revoked' };
    const { record } = stored;
    const window = this.rateWindows.hit(record.id, now, request.rateLimitWindowMs);
    const admitted = { outcome: 'admitted' as const, totalHits: window.hits, resetTime: new Date(window.resetAt) };
    if (!request.reservation || window.hits > record.rateLimitPerMinute) return { ...admitted, reserved: null };
    const { month, credits, ttlMs, minCredits } = request.reservation;
    return { ...admitted, reserved: this.reserveNow(record.id, month, credits, record.monthlyCreditCap, ttlMs, minCredits) };
  }

  /** The key one of whose live secrets hashes to `sha256`. */
  private findStoredNow(sha256: string, now: number): StoredKey | null {
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

  async seedKey(input: NewKey): Promise<void> {
    if (!this.keys.has(input.id)) await this.createKey(input);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord> {
    const stored = this.requireKey(id);
    stored.view = undefined;
    stored.version = (stored.version ?? 0) + 1;
    for (const [field, value] of Object.entries(patch)) {
      if (value !== undefined) (stored.record as unknown as Record<string, unknown>)[field] = Array.isArray(value) ? [...value] : value;
    }
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
    const only = stored.secrets.length === 1 && stored.secrets[0].sha256 === secret.sha256 && stored.secrets[0].expiresAt === null;
    if (only) return false;
    for (const old of stored.secrets) this.secretIndex.delete(old.sha256);
    stored.secrets = [{ sha256: secret.sha256, expiresAt: null }];
    this.secretIndex.set(secret.sha256, id);
    stored.record.last4 = last4;
    stored.view = undefined;
    stored.version = (stored.version ?? 0) + 1;
    this.keysChanged();
    return true;
  }

  reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number): Promise<ReserveResult> {
    return this.answer(() => this.reserveNow(keyId, month, credits, cap, ttlMs, minCredits));
  }

  /** The check and the reservation as one step, as the Redis script is: nothing awaits in here. */
  private reserveNow(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number): ReserveResult {
    const now = this.clock();
    const bucket = `${keyId}|${month}`;
    const spent = this.spend.get(bucket) ?? 0;
    const reserved = this.reservations.liveUnits(bucket, now);
    let units = toCreditUnitsCeil(credits);
    if (cap !== null && spent + reserved + units > toCreditUnits(cap)) {
      const left = toCreditUnits(cap) - spent - reserved;
      if (minCredits === undefined || left < toCreditUnitsCeil(minCredits)) {
        return { ok: false, spent: fromCreditUnits(spent), reserved: fromCreditUnits(reserved), cap };
      }
      units = left;
    }
    const held = units === toCreditUnitsCeil(credits) ? credits : fromCreditUnits(units);
    const reservation: Reservation = { id: crypto.randomUUID(), keyId, month, credits: held };
    this.reservations.add(bucket, reservation.id, units, now + ttlMs);
    return { ok: true, reservation, spent: fromCreditUnits(spent) };
  }

  renewReservation(reservation: Reservation, ttlMs: number): Promise<boolean> {
    return this.answer(() => {
      const now = this.clock();
      return this.reservations.renew(`${reservation.keyId}|${reservation.month}`, reservation.id, now + ttlMs, now);
    });
  }

  settleCredits(reservation: Reservation, usage: UsageEntry): Promise<void> {
    return this.answer(() => this.settleNow(reservation, usage));
  }

  private settleNow(reservation: Reservation, usage: UsageEntry): void {
    checkSettledFigures(usage);
    const bucket = `${reservation.keyId}|${reservation.month}`;
    // No reservation: already settled (or never made here); either way there is nothing to record.
    if (!this.reservations.take(bucket, reservation.id)) return;
    const units = toCreditUnits(usage.credits);
    this.changes += 1;
    this.spend.set(bucket, (this.spend.get(bucket) ?? 0) + units);
    const ledgerKey = `${bucket}|${usage.model}`;
    const totals = this.ledger.get(ledgerKey) ?? emptyTotals(usage.model);
    addToTotals(totals, usage, units);
    this.ledger.set(ledgerKey, totals);
    // The day bucket and the log record in the same step, so neither can differ from the month's.
    const now = this.clock();
    const at = bookingTime(usage.at ?? now, reservation.month);
    this.dayLedger.add(reservation.keyId, utcDay(at), usage.model, usage, units);
    if (usage.log) this.requestLog.append({ ...usage.log, time: at, credits: fromCreditUnits(units) }, now);
  }

  async getMonthSpend(keyId: string, month: string): Promise<number> {
    return fromCreditUnits(this.spend.get(`${keyId}|${month}`) ?? 0);
  }

  async getUsage(keyId: string, month: string): Promise<UsageTotals[]> {
    const prefix = `${keyId}|${month}|`;
    return [...this.ledger.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .map(([, v]) => ({ ...v, credits: fromCreditUnits(v.credits) }));
  }

  async savePin(pin: PinnedObject, ttlMs: number): Promise<void> {
    this.pins[pin.kind].save(pin, ttlMs);
    // A batch's pin carries its credit holds and billing state: flushed like spend (memory-persistence.ts).
    this.changes += 1;
  }

  async getPin(kind: PinnedObject['kind'], id: string): Promise<PinnedObject | null> {
    return this.pins[kind].get(id);
  }

  async deletePin(kind: PinnedObject['kind'], id: string): Promise<boolean> {
    this.changes += 1;
    return this.pins[kind].delete(id);
  }

  async saveResponse(record: StoredResponse, ttlMs: number, maxKeyBytes?: number): Promise<boolean> {
    return this.responses.save(record, ttlMs, maxKeyBytes);
  }

  async getResponse(id: string): Promise<StoredResponse | null> {
    return this.responses.get(id);
  }

  async deleteResponse(id: string): Promise<boolean> {
    return this.responses.delete(id);
  }

  /** Keys, secrets (hashes only), spend and ledger as plain JSON; reservations in flight are left out. */
  snapshot(): MemorySnapshot {
    return {
      version: 1,
      keys: [...this.keys.values()].map((stored) => ({ record: copyRecord(stored.record), secrets: stored.secrets.map((s) => ({ ...s })) })),
      spend: Object.fromEntries(this.spend),
      ledger: Object.fromEntries([...this.ledger].map(([k, v]) => [k, { ...v }])),
      spendState: { dayLedger: this.dayLedger.snapshot(), requestLog: this.requestLog.snapshot(), ...this.alerts.snapshot() },
      pins: [...this.pins.batch.entries(), ...this.pins.file.entries()].map(({ record, expiresAt }) => ({ pin: record, expiresAt })),
    };
  }

  /**
   * Replace this store's state with a snapshot's.
   * @throws Error when the snapshot is not a version 1 snapshot
   */
  restore(snapshot: MemorySnapshot): void {
    if (snapshot?.version !== 1 || !Array.isArray(snapshot.keys)) throw new Error('not a version 1 memory store snapshot');
    this.keys.clear();
    this.secretIndex.clear();
    this.spend.clear();
    this.ledger.clear();
    this.reservations.clear();
    for (const stored of snapshot.keys) {
      this.keys.set(stored.record.id, { record: copyRecord(stored.record), secrets: stored.secrets.map((s) => ({ ...s })) });
      for (const secret of stored.secrets) this.secretIndex.set(secret.sha256, stored.record.id);
    }
    for (const [bucket, units] of Object.entries(snapshot.spend ?? {})) this.spend.set(bucket, units);
    for (const [ledgerKey, totals] of Object.entries(snapshot.ledger ?? {})) this.ledger.set(ledgerKey, { ...totals });
    this.dayLedger.restore(snapshot.spendState?.dayLedger ?? {});
    this.requestLog.restore(snapshot.spendState?.requestLog ?? []);
    this.alerts.restore(snapshot.spendState ?? {});
    for (const { pin, expiresAt } of snapshot.pins ?? []) {
      this.pins[pin.kind].restore(pin, expiresAt);
      const batch = pin.data as { billed?: boolean; holds?: Array<{ reservation: Reservation }> };
      if (pin.kind !== 'batch' || batch.billed) continue;
      for (const { reservation } of batch.holds ?? []) {
        this.reservations.add(`${reservation.keyId}|${reservation.month}`, reservation.id, toCreditUnitsCeil(reservation.credits), expiresAt);
      }
    }
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}

  private requireKey(id: string): StoredKey {
    const stored = this.keys.get(id);
    if (!stored) throw new Error(`key "${id}" does not exist`);
    return stored;
  }
}
