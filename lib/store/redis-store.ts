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
import { connectRedis, type RedisConnection, type RedisConnectionOptions } from './redis-connection';
import { RedisAdmission } from './redis-admission';
import { createRedisKey, replaceRedisSecret, rotateRedisKey } from './redis-key-admin';
import { BUCKET_RETENTION_MS, RedisKeys } from './redis-keys';
import { migrateLayout } from './redis-migration';
import { RedisObjects } from './redis-objects';
import { RENEW_RESERVATION, UPDATE_KEY } from './redis-scripts';
import { RENEW_IN_TEAM, reservationLedgers, settleScriptFor } from './redis-team-caps';
import { locateKey, moveKeyState, resumeKeyMove, resumeKeyMoves } from './redis-key-move';
import { withKeyMoveLock } from './redis-key-move-lock';
import { decodeDailyUsage } from './redis-spend';
import { RedisRequestLog } from './redis-request-log';
import { decodeRecord, decodeUsage, translateScriptError } from './redis-codec';
import { InFlight } from '../http/in-flight';
import { RedisPeopleStore } from './redis-people';
import { RedisTeamStore } from './redis-teams';
import { bookingTime, utcDay } from './usage-days';
import {
  createKeyRecord, type AdmissionRequest, type AdmissionResult, type GatewayStore, type KeyPatch, type KeyRecord, type KeySecret, type KeySnapshot,
  type NewKey, type Reservation, type PinnedObject, type ReserveResult, type StoredResponse, type UsageEntry, type UsageTotals,
  type BudgetAlert, type DailyUsageTotals, type PendingBudgetAlert, type RequestLogPage, type RequestLogRecord, type AuditDraft, type AuditEntry, type AuditHead,
  type TeamCaps,
} from './types';
import { RedisAuditLog } from '../audit/redis-audit-log';

/** Default prefix of every Redis key the gateway writes. */
export const DEFAULT_REDIS_PREFIX = 'gateway:';

export interface RedisStoreOptions extends RedisConnectionOptions {
  /** Prefix of every key written, so several gateways (or test runs) can share a server. Default `gateway:`. */
  prefix?: string;
  /** Clock for rotation expiry and reservation holds, epoch ms. Default: the real clock. */
  clock?: Clock;
}

export class RedisStore implements GatewayStore {
  readonly kind = 'redis';
  /** Writes under way; close() waits for them. */
  private readonly pending = new InFlight();
  private readonly admission: RedisAdmission;
  /** The request log, and on a cluster its outboxes and their sweep (redis-request-log.ts). */
  readonly requestLog: RedisRequestLog;
  private readonly objects: RedisObjects;
  /** The team role (teams made through the admin API, members' own caps): redis-teams.ts. */
  readonly teams: RedisTeamStore;

  private constructor(
    private readonly connection: RedisConnection,
    private readonly keys: RedisKeys,
    private readonly clock: Clock,
    /** The people role (sign-ins, sessions, users): people-types.ts. */ readonly people: RedisPeopleStore,
    onError?: (err: Error) => void,
    private readonly audit = new RedisAuditLog(connection, keys.prefix, clock),
  ) {
    this.admission = new RedisAdmission(connection, keys);
    this.requestLog = new RedisRequestLog(connection, keys, clock, this.pending, onError);
    this.objects = new RedisObjects(connection, keys, clock);
    this.teams = new RedisTeamStore(connection, keys.prefix);
  }

  /** `cluster` when connected to a Redis Cluster, else `single`. */
  get mode(): 'single' | 'cluster' { return this.connection.mode; }
  get prefix(): string { return this.keys.prefix; }

  /**
   * Connect to Redis, move a store written in the earlier layout to this one (redis-migration.ts), and
   * settle the moves of keys between hash tags left part way (redis-key-move.ts: rolled back before
   * their switch, finished after).
   * @throws Error when the server cannot be reached (the message names the URL without its password),
   *   or the prefix holds a brace
   */
  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    const keys = new RedisKeys(options.prefix ?? DEFAULT_REDIS_PREFIX);
    const connection = await connectRedis(options);
    try {
      await migrateLayout(connection, keys);
      // Moves of keys between hash tags a crash left part way (their keys answer 503 until then): rolled
      // back before their switch, finished after.
      await resumeKeyMoves(connection, keys);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
    const store = new RedisStore(connection, keys, options.clock ?? systemClock, new RedisPeopleStore(connection, keys.prefix), options.onError);
    store.requestLog.startSweeping();
    return store;
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
    await createRedisKey(this.connection, this.keys, record, input.secret.sha256);
    return record;
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord> {
    const fields = Object.entries(patch).filter(([, value]) => value !== undefined).flatMap(([field, value]) => [field, JSON.stringify(value)]);
    // One change of a key at a time (its move lock, redis-key-move-lock.ts), held through the record's
    // update, so a change that waited finds the key where the one before it left it, and a field written
    // while a move copies the record is never left behind at the old place.
    return withKeyMoveLock(this.connection, this.keys, id, async (lock) => {
      // A move an earlier call left part way is settled first: rolled back before its switch (its caller
      // was told it failed), finished after (redis-key-move.ts).
      await resumeKeyMove(this.connection, this.keys, id, { lock });
      const team = await locateKey(this.connection, this.keys, id);
      // Joining, leaving or changing team moves the key's state to that team's hash tag first (redis-key-move.ts).
      if (patch.team !== undefined && (patch.team ?? null) !== team && (await this.connection.commands.exists(this.keys.key(id, team)))) await moveKeyState(this.connection, this.keys, id, patch.team ?? null, { lock });
      try {
        return decodeRecord((await this.connection.run(UPDATE_KEY, [this.keys.key(id, patch.team === undefined ? team : patch.team)], fields)) as string[]);
      } catch (err) {
        throw translateScriptError(err, id);
      }
    });
  }

  // A secret's change holds the key's move lock too, as updateKey does: one written between a move's
  // copy and its switch would be left at the old place, and the old secret would go on working.
  replaceSecret(id: string, secret: KeySecret, last4: string): Promise<boolean> {
    return withKeyMoveLock(this.connection, this.keys, id, async (lock) => {
      await resumeKeyMove(this.connection, this.keys, id, { lock });
      return replaceRedisSecret(this.connection, this.keys, id, secret, last4);
    });
  }

  async rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now = this.clock()): Promise<KeyRecord> {
    return withKeyMoveLock(this.connection, this.keys, id, async (lock) => {
      await resumeKeyMove(this.connection, this.keys, id, { lock });
      return rotateRedisKey(this.connection, this.keys, id, secret, last4, graceMs, now);
    });
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
    // The record is written by the settlement's own script (the log, or on a cluster the key's outbox): no crash splits them.
    const log = record && this.requestLog.settlementPart(keyId, team, reservation.id, record, now);
    // A team key's member and team ledgers settle in the same script (redis-team-caps.ts).
    const ledgers = reservationLedgers(this.keys, reservation);
    const recorded = await this.connection.run(settleScriptFor(ledgers.length),
      [this.keys.credits(keyId, month, team), this.keys.usage(keyId, month, team), this.keys.usageDay(keyId, month, team), this.keys.settled(keyId, team), ...ledgers,
        ...(log ? [log.key] : [])],
      [reservation.id, String(units), usage.model, String(usage.inputTokens), String(usage.outputTokens),
        String(usage.cacheCreationInputTokens), String(usage.cacheReadInputTokens), String(BUCKET_RETENTION_MS), utcDay(at),
        String(now), String(EXPIRED_RESERVATION_MEMORY_MS), ...(log ? log.args : [])],
    );
    if (Number(recorded) === 1 && log) await this.requestLog.afterSettlement(keyId, team, reservation.id);
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
    await this.pending.track(this.requestLog.append(record));
  }

  readRequestLog(fromMs: number, toMs: number, cursor: string | null, limit: number): Promise<RequestLogPage> {
    return this.requestLog.read(fromMs, toMs, cursor, limit);
  }

  setRequestLogRetention(retentionMs: number): void {
    this.requestLog.setRetention(retentionMs);
  }

  // Alerts, pins and stored responses: redis-objects.ts.
  claimBudgetAlert(alert: BudgetAlert): Promise<boolean> { return this.objects.claimBudgetAlert(alert); }
  leaseBudgetAlert(now: number, leaseMs: number): Promise<PendingBudgetAlert | null> { return this.objects.leaseBudgetAlert(now, leaseMs); }
  retryBudgetAlert(pending: PendingBudgetAlert, dueAt: number): Promise<void> { return this.objects.retryBudgetAlert(pending, dueAt); }
  finishBudgetAlert(id: string): Promise<void> { return this.objects.finishBudgetAlert(id); }
  savePin(pin: PinnedObject, ttlMs: number): Promise<void> { return this.objects.savePin(pin, ttlMs); }
  getPin(kind: PinnedObject['kind'], id: string): Promise<PinnedObject | null> { return this.objects.getPin(kind, id); }
  getPins(kind: PinnedObject['kind'], ids: readonly string[]): Promise<Array<PinnedObject | null>> { return this.objects.getPins(kind, ids); }
  deletePin(kind: PinnedObject['kind'], id: string): Promise<boolean> { return this.objects.deletePin(kind, id); }
  saveResponse(record: StoredResponse, ttlMs: number, maxKeyBytes?: number): Promise<boolean> { return this.objects.saveResponse(record, ttlMs, maxKeyBytes); }
  getResponse(id: string): Promise<StoredResponse | null> { return this.objects.getResponse(id); }
  deleteResponse(id: string): Promise<boolean> { return this.objects.deleteResponse(id); }

  appendAudit(draft: AuditDraft): Promise<AuditEntry> { return this.audit.append(draft); }
  readAudit(afterId: number, limit: number): Promise<AuditEntry[]> { return this.audit.read(afterId, limit); }
  readAuditHead(): Promise<AuditHead | null> { return this.audit.readHead(); }

  async ping(): Promise<void> {
    await this.connection.ping();
  }

  async close(): Promise<void> {
    // Settlements start when a response closes; let those of the last responses reach Redis first.
    await new Promise((resolve) => setImmediate(resolve));
    this.requestLog.stopSweeping();
    await this.pending.idle();
    await this.connection.close();
  }
}
