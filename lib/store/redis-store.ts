/**
 * Redis store (`REDIS_URL`, or a Redis Cluster with `REDIS_CLUSTER_NODES`; the node `redis` client):
 * the store for several instances behind one router, and for usage that survives a crash. Every
 * check-then-write is one Lua script (redis-scripts.ts) on the keys of one API key, which share a
 * hash tag and so one cluster slot. A request waits for one round trip before its upstream call, its
 * admission (redis-admission.ts).
 */
import { checkSettledFigures, fromCreditUnits, toCreditUnits } from './credits';
import { EXPIRED_RESERVATION_MEMORY_MS } from './memory-reservations';
import { systemClock, type Clock } from './month';
import { DEFAULT_REQUEST_LOG_RETENTION_MS } from './memory-spend';
import { connectRedis, type RedisConnection, type RedisConnectionOptions } from './redis-connection';
import { RedisAdmission } from './redis-admission';
import { createRedisKey, replaceRedisSecret, rotateRedisKey } from './redis-key-admin';
import { BUCKET_RETENTION_MS, RedisKeys } from './redis-keys';
import { migrateLayout } from './redis-migration';
import { APPEND_REQUEST_LOG, CLAIM_ALERT, LEASE_ALERT, RENEW_RESERVATION, RETRY_ALERT, UPDATE_KEY } from './redis-scripts';
import { RENEW_IN_TEAM, reservationLedgers, settleScriptFor } from './redis-team-caps';
import { locateKey, moveKeyState } from './redis-key-move';
import { decodeDailyUsage, decodeLogPage, encodeLogRecord, LOG_ID_SLACK_MS, retryUntilDone } from './redis-spend';
import { decodeRecord, decodeUsage, translateScriptError } from './redis-codec';
import { InFlight } from '../http/in-flight';
import { bookingTime, utcDay } from './usage-days';
import {
  createKeyRecord,
  type AdmissionRequest, type AdmissionResult, type GatewayStore, type KeyPatch, type KeyRecord, type KeySecret, type KeySnapshot,
  type NewKey, type Reservation, type PinnedObject, type ReserveResult, type StoredResponse, type UsageEntry, type UsageTotals,
  type BudgetAlert, type DailyUsageTotals, type PendingBudgetAlert, type RequestLogPage, type RequestLogRecord, type TeamCaps,
} from './types';

/** Default prefix of every Redis key the gateway writes. */
export const DEFAULT_REDIS_PREFIX = 'gateway:';

export interface RedisStoreOptions extends RedisConnectionOptions {
  /** Prefix of every key written, so several gateways (or test runs) can share a server. Default `gateway:`. */
  prefix?: string;
  /** Clock for rotation expiry and reservation holds, epoch ms. Default: the real clock. */
  clock?: Clock;
}

/** The ttl of a `request-log` stream past its retention (so an idle deployment's log goes away): 1 day. */
const LOG_TTL_MARGIN_MS = 24 * 60 * 60 * 1000;

export class RedisStore implements GatewayStore {
  readonly kind = 'redis';
  /** Writes under way; close() waits for them. */
  private readonly pending = new InFlight();
  private logRetentionMs = DEFAULT_REQUEST_LOG_RETENTION_MS;
  /** Set by close(): retries of log records stop after their attempt under way. */
  private closed = false;
  private readonly admission: RedisAdmission;

  private constructor(
    private readonly connection: RedisConnection,
    private readonly keys: RedisKeys,
    private readonly clock: Clock,
    private readonly onError?: (err: Error) => void,
  ) {
    this.admission = new RedisAdmission(connection, keys);
  }

  /** `cluster` when connected to a Redis Cluster, else `single`. */
  get mode(): 'single' | 'cluster' {
    return this.connection.mode;
  }

  get prefix(): string {
    return this.keys.prefix;
  }

  /**
   * Connect to Redis, and move a store written in the earlier layout to this one (redis-migration.ts).
   * @throws Error when the server cannot be reached (the message names the URL without its password),
   *   or the prefix holds a brace
   */
  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    const keys = new RedisKeys(options.prefix ?? DEFAULT_REDIS_PREFIX);
    const connection = await connectRedis(options);
    try {
      await migrateLayout(connection, keys);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
    return new RedisStore(connection, keys, options.clock ?? systemClock, options.onError);
  }

  async findKeyBySecretHash(sha256: string, now = this.clock()): Promise<KeyRecord | null> {
    return (await this.admission.identifyKey(sha256, now, true))?.key ?? null;
  }

  identifyKey(sha256: string, now: number, fresh = false): Promise<KeySnapshot | null> {
    return this.admission.identifyKey(sha256, now, fresh);
  }

  admit(request: AdmissionRequest): Promise<AdmissionResult> {
    return this.admission.admit(request);
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    let record = await this.connection.commands.hGetAll(this.keys.key(id));
    if (record.movedTo) record = await this.connection.commands.hGetAll(this.keys.key(id, record.movedTo));
    return Object.keys(record).length === 0 ? null : decodeRecord(Object.entries(record).flat());
  }

  async listKeys(): Promise<KeyRecord[]> {
    const ids = (await this.connection.commands.sMembers(this.keys.keys)).sort();
    const records = await Promise.all(ids.map((id) => this.getKey(id)));
    return records.filter((record): record is KeyRecord => record !== null);
  }

  async createKey(input: NewKey): Promise<KeyRecord> {
    const record = createKeyRecord(input, this.clock());
    await createRedisKey(this.connection, this.keys, record, input.secret.sha256, false);
    return record;
  }

  async seedKey(input: NewKey): Promise<void> {
    await createRedisKey(this.connection, this.keys, createKeyRecord(input, this.clock()), input.secret.sha256, true);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord> {
    const fields = Object.entries(patch).filter(([, value]) => value !== undefined).flatMap(([field, value]) => [field, JSON.stringify(value)]);
    const team = await locateKey(this.connection, this.keys, id);
    // Joining, leaving or changing team moves the key's state to that team's hash tag first (redis-key-move.ts).
    if (patch.team !== undefined && (patch.team ?? null) !== team && (await this.connection.commands.exists(this.keys.key(id, team)))) await moveKeyState(this.connection, this.keys, id, team, patch.team ?? null);
    try {
      return decodeRecord((await this.connection.run(UPDATE_KEY, [this.keys.key(id, patch.team === undefined ? team : patch.team)], fields)) as string[]);
    } catch (err) {
      throw translateScriptError(err, id);
    }
  }

  replaceSecret(id: string, secret: KeySecret, last4: string): Promise<boolean> {
    return replaceRedisSecret(this.connection, this.keys, id, secret, last4);
  }

  async rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now = this.clock()): Promise<KeyRecord> {
    return rotateRedisKey(this.connection, this.keys, id, secret, last4, graceMs, now);
  }

  reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number, deadline?: number, teamCaps?: TeamCaps): Promise<ReserveResult> {
    return this.admission.reserve({ keyId, month, credits, cap, now: this.clock(), ttlMs, minCredits, deadline, teamCaps });
  }

  async renewReservation(reservation: Reservation, ttlMs: number): Promise<boolean> {
    const now = this.clock();
    const ledgers = reservationLedgers(this.keys, reservation);
    const renewed = await this.connection.run(ledgers.length > 0 ? RENEW_IN_TEAM : RENEW_RESERVATION, [this.keys.credits(reservation.keyId, reservation.month, reservation.team), ...ledgers],
      [reservation.id, String(now), String(now + ttlMs)]);
    return Number(renewed) === 1;
  }

  async settleCredits(reservation: Reservation, usage: UsageEntry): Promise<void> {
    checkSettledFigures(usage);
    await this.pending.track(this.settle(reservation, usage));
  }

  private async settle(reservation: Reservation, usage: UsageEntry): Promise<void> {
    const { keyId, month, team } = reservation;
    const now = this.clock();
    const at = bookingTime(usage.at ?? now, month);
    const units = toCreditUnits(usage.credits);
    const record = usage.log && { ...usage.log, time: at, credits: fromCreditUnits(units) };
    // On one server the record is written by the settlement's own script: no crash splits them.
    const logged = record !== undefined && this.connection.mode === 'single';
    // A team key's member and team ledgers settle in the same script (redis-team-caps.ts).
    const ledgers = reservationLedgers(this.keys, reservation);
    const recorded = await this.connection.run(settleScriptFor(ledgers.length),
      [this.keys.credits(keyId, month, team), this.keys.usage(keyId, month, team), this.keys.usageDay(keyId, month, team), this.keys.settled(keyId, team), ...ledgers,
        ...(logged ? [this.keys.requestLog] : [])],
      [reservation.id, String(units), usage.model, String(usage.inputTokens), String(usage.outputTokens),
        String(usage.cacheCreationInputTokens), String(usage.cacheReadInputTokens), String(BUCKET_RETENTION_MS), utcDay(at),
        String(now), String(EXPIRED_RESERVATION_MEMORY_MS), ...(logged ? this.logArgs(record, now) : [])],
    );
    if (Number(recorded) !== 1 || !record || logged) return;
    // In a cluster the log is in another slot: its record follows the settlement that took effect,
    // once. When the log's node fails now, the record is retried on its own (a retry of the whole
    // settlement would find it settled and write none).
    await this.appendLog(record, now).catch(() => {
      const retried = retryUntilDone(() => this.appendLog(record, now), () => this.closed);
      this.pending.track(retried).catch((err: Error) => this.onError?.(new Error(`request log record of ${record.requestId} not written: ${err.message}`)));
    });
  }

  async getMonthSpend(keyId: string, month: string): Promise<number> {
    return fromCreditUnits(Number((await this.connection.commands.hGet(this.keys.credits(keyId, month, await locateKey(this.connection, this.keys, keyId)), 'spent')) ?? 0));
  }

  async getTeamMonthSpend(team: string, month: string, owner?: string): Promise<number> {
    return fromCreditUnits(Number((await this.connection.commands.hGet(owner === undefined ? this.keys.teamCredits(team, month) : this.keys.memberCredits(team, owner, month), 'spent')) ?? 0));
  }

  async getUsage(keyId: string, month: string): Promise<UsageTotals[]> {
    return decodeUsage(await this.connection.commands.hGetAll(this.keys.usage(keyId, month, await locateKey(this.connection, this.keys, keyId))));
  }

  // Spend visibility: usage by day, the request log, budget alerts (docs/spend.md).

  async getDailyUsage(keyId: string, month: string): Promise<DailyUsageTotals[]> {
    return decodeDailyUsage(await this.connection.commands.hGetAll(this.keys.usageDay(keyId, month, await locateKey(this.connection, this.keys, keyId))));
  }

  async appendRequestLog(record: RequestLogRecord): Promise<void> {
    await this.pending.track(this.appendLog(record, this.clock()));
  }

  private async appendLog(record: RequestLogRecord, now: number): Promise<void> {
    await this.connection.run(APPEND_REQUEST_LOG, [this.keys.requestLog], this.logArgs(record, now));
  }

  /** The arguments of APPEND_LOG_LUA (redis-scripts.ts) for `record` written at `now` (epoch ms). */
  private logArgs(record: RequestLogRecord, now: number): string[] {
    return [encodeLogRecord(record), String(Math.round(record.time)), String(now - this.logRetentionMs), String(this.logRetentionMs + LOG_TTL_MARGIN_MS)];
  }

  async readRequestLog(fromMs: number, toMs: number, cursor: string | null, limit: number): Promise<RequestLogPage> {
    const oldest = this.clock() - this.logRetentionMs;
    const start = cursor === null ? String(Math.max(0, Math.floor(fromMs))) : `(${cursor}`;
    const entries = await this.connection.commands.xRange(this.keys.requestLog, start, String(Math.floor(toMs) + LOG_ID_SLACK_MS), { COUNT: limit });
    const records = decodeLogPage(entries, fromMs, toMs, oldest);
    return { records, cursor: entries.length === limit ? entries[entries.length - 1].id : null };
  }

  setRequestLogRetention(retentionMs: number): void {
    this.logRetentionMs = retentionMs;
  }

  async claimBudgetAlert(alert: BudgetAlert): Promise<boolean> {
    const pending: PendingBudgetAlert = { alert, attempts: 0 };
    const claimed = await this.connection.run(
      CLAIM_ALERT,
      [this.keys.alertFired(alert.id), this.keys.alertsDue, this.keys.alertsPending],
      [alert.id, JSON.stringify(pending), String(this.clock()), String(BUCKET_RETENTION_MS)],
    );
    return Number(claimed) === 1;
  }

  async leaseBudgetAlert(now: number, leaseMs: number): Promise<PendingBudgetAlert | null> {
    const json = await this.connection.run(LEASE_ALERT, [this.keys.alertsDue, this.keys.alertsPending], [String(now), String(leaseMs)]);
    return typeof json === 'string' ? (JSON.parse(json) as PendingBudgetAlert) : null;
  }

  async retryBudgetAlert(pending: PendingBudgetAlert, dueAt: number): Promise<void> {
    await this.connection.run(RETRY_ALERT, [this.keys.alertsDue, this.keys.alertsPending], [pending.alert.id, JSON.stringify(pending), String(dueAt)]);
  }

  async finishBudgetAlert(id: string): Promise<void> {
    await this.connection.commands.multi().zRem(this.keys.alertsDue, id).hDel(this.keys.alertsPending, id).exec();
  }

  async savePin(pin: PinnedObject, ttlMs: number): Promise<void> {
    await this.connection.commands.set(this.keys.pin(pin.kind, pin.id), JSON.stringify(pin), { PX: ttlMs });
  }

  async getPin(kind: PinnedObject['kind'], id: string): Promise<PinnedObject | null> {
    const text = await this.connection.commands.get(this.keys.pin(kind, id));
    return text === null ? null : (JSON.parse(text) as PinnedObject);
  }

  async deletePin(kind: PinnedObject['kind'], id: string): Promise<boolean> {
    return (await this.connection.commands.del(this.keys.pin(kind, id))) > 0;
  }

  async saveResponse(record: StoredResponse, ttlMs: number, maxKeyBytes?: number): Promise<boolean> {
    const json = JSON.stringify(record);
    if (maxKeyBytes !== undefined) {
      // Bytes this key stored in the current window of ttlMs, which starts at its first save (NX: a
      // save never pushes the window's end back, so a key that stores every day is never locked out;
      // at most twice the bound is alive at once). Counted up front, given back when refused.
      const bytes = Buffer.byteLength(json);
      const counter = this.keys.responseBytes(record.keyId);
      const [held] = await this.connection.commands.multi().incrBy(counter, bytes).pExpire(counter, ttlMs, 'NX').exec() as unknown as [number];
      if (Number(held) > maxKeyBytes) {
        await this.connection.commands.decrBy(counter, bytes);
        return false;
      }
    }
    await this.connection.commands.set(this.keys.response(record.id), json, { PX: ttlMs });
    return true;
  }

  async getResponse(id: string): Promise<StoredResponse | null> {
    const text = await this.connection.commands.get(this.keys.response(id));
    return text === null ? null : (JSON.parse(text) as StoredResponse);
  }

  async deleteResponse(id: string): Promise<boolean> {
    return (await this.connection.commands.del(this.keys.response(id))) > 0;
  }

  async ping(): Promise<void> {
    await this.connection.ping();
  }

  async close(): Promise<void> {
    // Settlements start when a response closes; let those of the last responses reach Redis first.
    await new Promise((resolve) => setImmediate(resolve));
    this.closed = true;
    await this.pending.idle();
    await this.connection.close();
  }
}
