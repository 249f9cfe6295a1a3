/**
 * The memory store's spend state: usage per key, model and UTC day, the request log, and
 * budget alerts (which were claimed, which wait for delivery). Kept apart from memory-store.ts, which
 * calls in here from its settlement step and snapshot; persisted with the rest in the state file.
 */
import { fromCreditUnits } from './credits';
import type { Clock } from './month';
import type { BudgetAlert, DailyUsageTotals, PendingBudgetAlert, RequestLogPage, RequestLogRecord, UsageTotals } from './types';

/** Default time request log records are kept: 30 days. */
export const DEFAULT_REQUEST_LOG_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/** Default most request log records the memory store keeps (oldest dropped first). */
export const DEFAULT_MEMORY_REQUEST_LOG_RECORDS = 100_000;

/** The spend part of a memory store snapshot (all plain JSON; credits of totals in credit units). */
export interface MemorySpendSnapshot {
  /** `${keyId}|${day}|${model}` -> totals, credits in credit units */
  dayLedger: Record<string, UsageTotals>;
  /** Oldest first. */
  requestLog: RequestLogRecord[];
  /** Ids of every alert ever claimed. */
  firedAlerts: string[];
  pendingAlerts: Array<PendingBudgetAlert & { dueAt: number }>;
}

/** Add one settled request's tokens and `units` (credit units) to `totals`, as one more request. */
export function addToTotals(totals: UsageTotals, tokens: Omit<UsageTotals, 'model' | 'credits' | 'requests'>, units: number): void {
  totals.inputTokens += tokens.inputTokens;
  totals.outputTokens += tokens.outputTokens;
  totals.cacheCreationInputTokens += tokens.cacheCreationInputTokens;
  totals.cacheReadInputTokens += tokens.cacheReadInputTokens;
  totals.credits += units;
  totals.requests += 1;
}

/** Totals per key and month, then per `${day}|${model}` (credits in credit units). */
export class MemoryDayLedger {
  private readonly byKeyMonth = new Map<string, Map<string, UsageTotals & { day: string }>>();

  /** Add one settled request (`units`: credit units) to its day bucket. */
  add(keyId: string, day: string, model: string, tokens: Omit<UsageTotals, 'model' | 'credits' | 'requests'>, units: number): void {
    const bucket = `${keyId}|${day.slice(0, 7)}`;
    let days = this.byKeyMonth.get(bucket);
    if (!days) this.byKeyMonth.set(bucket, (days = new Map()));
    const field = `${day}|${model}`;
    let totals = days.get(field);
    if (!totals) {
      totals = { day, model, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, requests: 0 };
      days.set(field, totals);
    }
    addToTotals(totals, tokens, units);
  }

  /** The day rows of one key's month, credits in credits. */
  get(keyId: string, month: string): DailyUsageTotals[] {
    return [...(this.byKeyMonth.get(`${keyId}|${month}`)?.values() ?? [])].map((totals) => ({ ...totals, credits: fromCreditUnits(totals.credits) }));
  }

  snapshot(): Record<string, UsageTotals> {
    const flat: Record<string, UsageTotals> = {};
    for (const [bucket, days] of this.byKeyMonth) {
      const keyId = bucket.slice(0, bucket.lastIndexOf('|'));
      for (const totals of days.values()) {
        const { day, ...rest } = totals;
        flat[`${keyId}|${day}|${totals.model}`] = { ...rest };
      }
    }
    return flat;
  }

  restore(flat: Record<string, UsageTotals>): void {
    this.byKeyMonth.clear();
    for (const [field, totals] of Object.entries(flat)) {
      const match = /^(.*)\|(\d{4}-\d{2}-\d{2})\|/.exec(field);
      if (!match) continue;
      const [, keyId, day] = match;
      const days = this.byKeyMonth.get(`${keyId}|${day.slice(0, 7)}`) ?? new Map();
      days.set(`${day}|${totals.model}`, { ...totals, day });
      this.byKeyMonth.set(`${keyId}|${day.slice(0, 7)}`, days);
    }
  }
}

/**
 * The request log in memory: records in the order they were written, each with a sequence number
 * (the cursor). Records past the retention, or beyond `maxRecords`, are dropped from the old end.
 */
export class MemoryRequestLog {
  private records: RequestLogRecord[] = [];
  /** Index in `records` of the oldest kept record (dropped ones are spliced away in batches). */
  private head = 0;
  /** Sequence number of `records[0]`. */
  private firstSeq = 0;
  private retentionMs = DEFAULT_REQUEST_LOG_RETENTION_MS;
  private maxRecords = DEFAULT_MEMORY_REQUEST_LOG_RECORDS;

  setRetention(retentionMs: number, maxRecords = DEFAULT_MEMORY_REQUEST_LOG_RECORDS): void {
    this.retentionMs = retentionMs;
    this.maxRecords = maxRecords;
  }

  append(record: RequestLogRecord, now: number): void {
    this.records.push(record);
    this.trim(now);
  }

  read(fromMs: number, toMs: number, cursor: string | null, limit: number, now: number): RequestLogPage {
    this.trim(now);
    const afterSeq = cursor === null ? -1 : Number(cursor);
    let index = Math.max(this.head, afterSeq + 1 - this.firstSeq);
    const records: RequestLogRecord[] = [];
    for (; index < this.records.length && records.length < limit; index++) {
      const record = this.records[index];
      if (record.time >= fromMs && record.time < toMs) records.push({ ...record });
    }
    return { records, cursor: index < this.records.length ? String(this.firstSeq + index - 1) : null };
  }

  private trim(now: number): void {
    const oldest = now - this.retentionMs;
    while (this.head < this.records.length && (this.records.length - this.head > this.maxRecords || this.records[this.head].time < oldest)) this.head++;
    // Splice the dropped records away once they are a good share of the array (amortised O(1)).
    if (this.head > 1024 && this.head * 2 > this.records.length) {
      this.records = this.records.slice(this.head);
      this.firstSeq += this.head;
      this.head = 0;
    }
  }

  snapshot(): RequestLogRecord[] {
    return this.records.slice(this.head);
  }

  /**
   * The kept records from sequence number `seq` on (all kept ones when `seq` is older than the oldest
   * kept), with the sequence number the next record will get and how many records are kept.
   */
  since(seq: number): { records: RequestLogRecord[]; next: number; kept: number } {
    return {
      records: this.records.slice(Math.max(this.head, seq - this.firstSeq)),
      next: this.firstSeq + this.records.length,
      kept: this.records.length - this.head,
    };
  }

  restore(records: RequestLogRecord[]): void {
    this.records = records.map((record) => ({ ...record }));
    this.head = 0;
    this.firstSeq = 0;
  }
}

/** Budget alerts in memory: every id ever claimed, and the pending ones with when each is due. */
export class MemoryAlerts {
  private readonly fired = new Set<string>();
  private readonly pending = new Map<string, PendingBudgetAlert & { dueAt: number }>();

  claim(alert: BudgetAlert, now: number): boolean {
    if (this.fired.has(alert.id)) return false;
    this.fired.add(alert.id);
    this.pending.set(alert.id, { alert: { ...alert }, attempts: 0, dueAt: now });
    return true;
  }

  lease(now: number, leaseMs: number): PendingBudgetAlert | null {
    for (const entry of this.pending.values()) {
      if (entry.dueAt > now) continue;
      entry.dueAt = now + leaseMs;
      return { alert: { ...entry.alert }, attempts: entry.attempts };
    }
    return null;
  }

  retry(pending: PendingBudgetAlert, dueAt: number): void {
    const entry = this.pending.get(pending.alert.id);
    if (!entry) return;
    entry.attempts = pending.attempts;
    entry.dueAt = dueAt;
  }

  finish(id: string): void {
    this.pending.delete(id);
  }

  snapshot(): Pick<MemorySpendSnapshot, 'firedAlerts' | 'pendingAlerts'> {
    return { firedAlerts: [...this.fired], pendingAlerts: [...this.pending.values()].map((entry) => ({ ...entry, alert: { ...entry.alert } })) };
  }

  restore(snapshot: Partial<MemorySpendSnapshot>): void {
    this.fired.clear();
    this.pending.clear();
    for (const id of snapshot.firedAlerts ?? []) this.fired.add(id);
    for (const entry of snapshot.pendingAlerts ?? []) this.pending.set(entry.alert.id, { ...entry, alert: { ...entry.alert } });
  }
}

/** The memory store's spend visibility (GatewayStore's day totals, request log and budget alerts); MemoryStore extends it. */
export class MemorySpendStore {
  protected readonly dayLedger = new MemoryDayLedger();
  protected readonly requestLog = new MemoryRequestLog();
  protected readonly alerts = new MemoryAlerts();

  constructor(protected readonly clock: Clock) {}

  async getDailyUsage(keyId: string, month: string): Promise<DailyUsageTotals[]> {
    return this.dayLedger.get(keyId, month);
  }

  async appendRequestLog(record: RequestLogRecord): Promise<void> {
    this.requestLog.append({ ...record }, this.clock());
  }

  async readRequestLog(fromMs: number, toMs: number, cursor: string | null, limit: number): Promise<RequestLogPage> {
    return this.requestLog.read(fromMs, toMs, cursor, limit, this.clock());
  }

  /** The request log's records from sequence number `seq` on (MemoryRequestLog.since): the state file appends only those. */
  requestLogSince(seq: number): ReturnType<MemoryRequestLog['since']> {
    return this.requestLog.since(seq);
  }

  setRequestLogRetention(retentionMs: number, maxRecords?: number): void {
    this.requestLog.setRetention(retentionMs, maxRecords);
  }

  async claimBudgetAlert(alert: BudgetAlert): Promise<boolean> {
    return this.alerts.claim(alert, this.clock());
  }

  async leaseBudgetAlert(now: number, leaseMs: number): Promise<PendingBudgetAlert | null> {
    return this.alerts.lease(now, leaseMs);
  }

  async retryBudgetAlert(pending: PendingBudgetAlert, dueAt: number): Promise<void> {
    this.alerts.retry(pending, dueAt);
  }

  async finishBudgetAlert(id: string): Promise<void> {
    this.alerts.finish(id);
  }
}
