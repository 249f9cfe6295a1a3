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
import { addToTotals } from './memory-spend';
import { MemoryKeyStore } from './memory-keys';
import { systemClock, type Clock } from './month';
import { MemoryReservations } from './memory-reservations';
import { MemoryRateWindows } from './memory-rate-windows';
import { MemoryResponses } from './memory-responses';
import { MemoryPeopleStore } from './memory-people';
import { MemoryTeamStore } from './memory-teams';
import { bucketNamesOf, decideHold, ledgersOf, memberLedgerName, teamLedgerName, type TeamCaps } from './people-caps';
import { bookingTime, utcDay } from './usage-days';
import { atEndOfTurn } from '../http/turn';
import { MemoryAuditLog } from '../audit/memory-audit-log';
import type { AuditDraft, AuditEntry, AuditHead } from '../audit/audit-types';
import { copyRecord, emptyTotals, snapshotOf, type MemorySnapshot } from './memory-key-records';
import type {
  AdmissionRequest, AdmissionResult, GatewayStore, KeySnapshot, KeyRecord, Reservation, ReserveResult, PinnedObject, StoredResponse, UsageEntry, UsageTotals,
} from './types';

export type { MemorySnapshot } from './memory-key-records';

export class MemoryStore extends MemoryKeyStore implements GatewayStore {
  readonly kind = 'memory';
  /** `${keyId}|${month}` -> settled credit units */
  private readonly spend = new Map<string, number>();
  /** Credit reservations of requests in flight, per `${keyId}|${month}`. */
  private readonly reservations = new MemoryReservations();
  /** `${keyId}|${month}|${model}` -> totals (credits in credit units) */
  private readonly ledger = new Map<string, UsageTotals>();
  private readonly responses = new MemoryResponses(() => this.clock());
  private readonly pins = { batch: new MemoryResponses<PinnedObject>(() => this.clock(), Infinity, Infinity), file: new MemoryResponses<PinnedObject>(() => this.clock(), Infinity, Infinity) };
  private readonly rateWindows = new MemoryRateWindows();
  /** The people role (sign-ins, sessions, users): people-types.ts. */
  readonly people = new MemoryPeopleStore(() => this.clock(), (urgent) => {
    this.changes += 1;
    if (urgent) this.onKeysChanged?.();
  });
  /** The team role (teams made through the admin API, members' own caps): people-types.ts; a change is written at once. */
  readonly teams = new MemoryTeamStore(() => { this.changes += 1; this.onKeysChanged?.(); });

  private readonly auditLog = new MemoryAuditLog();

  constructor(clock: Clock = systemClock) { super(clock); }

  /**
   * Runs `work` now, in one synchronous step, and answers its result at the end of the event loop's
   * turn (lib/http/turn.ts), as a network store's reply arrives. A throw rejects the answer at once.
   */
  private async answer<T>(work: () => T): Promise<T> {
    return atEndOfTurn(work());
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
    const { month, credits, ttlMs, minCredits, teamCaps } = request.reservation;
    return { ...admitted, reserved: this.reserveNow(record.id, month, credits, record.monthlyCreditCap, ttlMs, minCredits, teamCaps) };
  }

  reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number, _deadline?: number, teamCaps?: TeamCaps): Promise<ReserveResult> {
    return this.answer(() => this.reserveNow(keyId, month, credits, cap, ttlMs, minCredits, teamCaps));
  }

  /**
   * The check and the reservation as one step, as the Redis script is: nothing awaits in here. A team
   * key's hold goes in its member's and team's buckets too (people-caps.ts), under the same id.
   */
  private reserveNow(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number, teamCaps?: TeamCaps): ReserveResult {
    const now = this.clock();
    if (teamCaps) return this.reserveInTeamNow(keyId, month, credits, cap, ttlMs, minCredits, teamCaps, now);
    const bucket = `${keyId}|${month}`;
    const spent = this.spend.get(bucket) ?? 0;
    const reserved = this.reservations.liveUnits(bucket, now);
    let units = toCreditUnitsCeil(credits);
    if (cap !== null && spent + reserved + units > toCreditUnits(cap)) {
      const left = toCreditUnits(cap) - spent - reserved;
      if (minCredits === undefined || left < toCreditUnitsCeil(minCredits)) {
        return { ok: false, spent: fromCreditUnits(spent), reserved: fromCreditUnits(reserved), cap, limit: 'key' };
      }
      units = left;
    }
    const held = units === toCreditUnitsCeil(credits) ? credits : fromCreditUnits(units);
    const reservation: Reservation = { id: crypto.randomUUID(), keyId, month, credits: held };
    this.reservations.add(bucket, reservation.id, units, now + ttlMs);
    return { ok: true, reservation, spent: fromCreditUnits(spent) };
  }

  /** reserveNow for a key in a team: its own, its member's and its team's ledgers, one rule (people-caps.ts). */
  private reserveInTeamNow(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits: number | undefined, teamCaps: TeamCaps, now: number): ReserveResult {
    const levels = ledgersOf(keyId, cap, teamCaps).map(({ name, ...level }) => {
      const bucket = `${name}|${month}`;
      return { ...level, bucket, spent: this.spend.get(bucket) ?? 0, reserved: this.reservations.liveUnits(bucket, now) };
    });
    const decided = decideHold(levels, toCreditUnitsCeil(credits), minCredits === undefined ? undefined : toCreditUnitsCeil(minCredits));
    if (!decided.ok) {
      const { level } = decided;
      return { ok: false, spent: fromCreditUnits(level.spent), reserved: fromCreditUnits(level.reserved), cap: fromCreditUnits(level.cap!), limit: level.limit };
    }
    const held = decided.units === toCreditUnitsCeil(credits) ? credits : fromCreditUnits(decided.units);
    const reservation: Reservation = { id: crypto.randomUUID(), keyId, month, credits: held, team: teamCaps.team, owner: teamCaps.owner };
    for (const level of levels) this.reservations.add(level.bucket, reservation.id, decided.units, now + ttlMs);
    return { ok: true, reservation, spent: fromCreditUnits(levels[0].spent) };
  }

  renewReservation(reservation: Reservation, ttlMs: number): Promise<boolean> {
    return this.answer(() => {
      const now = this.clock();
      const renewed = this.reservations.renew(`${reservation.keyId}|${reservation.month}`, reservation.id, now + ttlMs, now);
      if (reservation.team) for (const name of bucketNamesOf(reservation).slice(1)) this.reservations.renew(`${name}|${reservation.month}`, reservation.id, now + ttlMs, now);
      return renewed;
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
    // A team key's member and team ledgers settle in the same step as its own.
    if (reservation.team) for (const name of bucketNamesOf(reservation).slice(1)) {
      const ledger = `${name}|${reservation.month}`;
      this.reservations.take(ledger, reservation.id);
      this.spend.set(ledger, (this.spend.get(ledger) ?? 0) + units);
    }
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

  async getTeamMonthSpend(team: string, month: string, owner?: string): Promise<number> {
    return fromCreditUnits(this.spend.get(`${owner === undefined ? teamLedgerName(team) : memberLedgerName(team, owner)}|${month}`) ?? 0);
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

  async getPins(kind: PinnedObject['kind'], ids: readonly string[]): Promise<Array<PinnedObject | null>> {
    return ids.map((id) => this.pins[kind].get(id));
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

  /** Appended and written to the state file (as a key change is) before the call resolves. */
  async appendAudit(draft: AuditDraft): Promise<AuditEntry> {
    const entry = this.auditLog.append(draft, this.clock());
    this.keysChanged();
    return entry;
  }

  async readAudit(afterId: number, limit: number): Promise<AuditEntry[]> {
    return this.auditLog.read(afterId, limit);
  }

  async readAuditHead(): Promise<AuditHead | null> {
    return this.auditLog.readHead();
  }

  /** The audit entries from position `from` on, and the head, now (the state file's writer appends them to its own file). */
  auditSince(from: number): { entries: AuditEntry[]; head: AuditHead | null } {
    return { entries: this.auditLog.read(from, Infinity), head: this.auditLog.readHead() };
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
      audit: this.auditLog.snapshot(),
      people: this.people.snapshot(),
      teams: this.teams.snapshot(),
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
    this.auditLog.restore(snapshot.audit);
    this.people.restore(snapshot.people);
    this.teams.restore(snapshot.teams);
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
}
