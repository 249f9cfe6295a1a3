/**
 * Redis store (`REDIS_URL`, the node `redis` client): the store for several instances behind one
 * router, and for usage that survives a crash. Every check-then-write is one Lua script
 * (redis-scripts.ts), and nothing about a key is cached in the process: each request reads the key's
 * state, so a revocation through any instance holds on the next request on every instance.
 *
 * Uses one Redis database and does not use Redis Cluster (scripts reach keys derived from their
 * arguments).
 */
import crypto from 'node:crypto';
import { createClient, type RedisClientType } from 'redis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { InFlight } from '../in-flight';
import { fromCreditUnits, toCreditUnits, toCreditUnitsCeil } from './credits';
import { EXPIRED_RESERVATION_MEMORY_MS } from './memory-reservations';
import { systemClock, type Clock } from './month';
import { DEFAULT_REQUEST_LOG_RETENTION_MS } from './memory-spend';
import {
  APPEND_REQUEST_LOG, CLAIM_ALERT, CREATE_KEY, FIND_KEY, LEASE_ALERT, RENEW_RESERVATION, RESERVE_CREDITS, RETRY_ALERT, ROTATE_KEY, SETTLE_CREDITS, UPDATE_KEY,
} from './redis-scripts';
import { decodeDailyUsage, decodeLogPage, encodeLogRecord, LOG_ID_SLACK_MS } from './redis-spend';
import { decodeRecord, decodeUsage, encodeRecord, redactUrl, translateScriptError } from './redis-codec';
import { bookingTime, utcDay } from './usage-days';
import {
  createKeyRecord,
  type GatewayStore, type KeyPatch, type KeyRecord, type KeySecret, type NewKey, type Reservation, type ReserveResult,
  type StoredResponse, type UsageEntry, type UsageTotals,
  type BudgetAlert, type DailyUsageTotals, type PendingBudgetAlert, type RequestLogPage, type RequestLogRecord,
} from './types';

/** How long a month's credit and usage buckets are kept after their last write: 400 days. */
export const BUCKET_RETENTION_MS = 400 * 24 * 60 * 60 * 1000;

/** Default prefix of every Redis key the gateway writes. */
export const DEFAULT_REDIS_PREFIX = 'gateway:';

export interface RedisStoreOptions {
  /** `redis://[user:password@]host:port[/db]` */
  url: string;
  /** Prefix of every key written, so several gateways (or test runs) can share a server. Default `gateway:`. */
  prefix?: string;
  /** Clock for rotation expiry and reservation holds, epoch ms. */
  clock?: Clock;
  /** Called with connection errors (the client reconnects by itself). Default: ignored. */
  onError?: (err: Error) => void;
}


/** The ttl of a `request-log` stream past its retention (so an idle deployment's log goes away): 1 day. */
const LOG_TTL_MARGIN_MS = 24 * 60 * 60 * 1000;

export class RedisStore implements GatewayStore {
  readonly kind = 'redis';
  private readonly scriptShas = new Map<string, string>();
  /** Writes under way; close() waits for them. */
  private readonly pending = new InFlight();
  private logRetentionMs = DEFAULT_REQUEST_LOG_RETENTION_MS;

  private constructor(
    private readonly client: RedisClientType,
    readonly prefix: string,
    private readonly clock: Clock,
  ) {}

  /**
   * Connect to Redis.
   * @throws Error when the server cannot be reached (the message names the URL without its password)
   */
  static async connect(options: RedisStoreOptions): Promise<RedisStore> {
    let connected = false;
    const client = createClient({
      url: options.url,
      socket: {
        // At start, an unreachable server is an error to report, not a wait; once connected, the
        // client reconnects by itself (requests fail meanwhile, so no control is silently skipped).
        reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(50 * 2 ** retries, 2000) : cause),
      },
    }) as RedisClientType;
    client.on('error', (err: Error) => options.onError?.(err));
    try {
      await client.connect();
      connected = true;
    } catch (err) {
      if (client.isOpen) client.destroy();
      throw new Error(`cannot connect to Redis at ${redactUrl(options.url)}: ${(err as Error).message}`);
    }
    return new RedisStore(client, options.prefix ?? DEFAULT_REDIS_PREFIX, options.clock ?? systemClock);
  }

  async findKeyBySecretHash(sha256: string, now = this.clock()): Promise<KeyRecord | null> {
    const found = (await this.run(FIND_KEY, [this.k(`secret:${sha256}`)], [this.prefix, sha256])) as [string[], string] | null;
    if (!found) return null;
    const [record, state] = found;
    if (state !== 'current' && Number(state) <= now) return null;
    return decodeRecord(record);
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const record = await this.client.hGetAll(this.k(`key:${id}`));
    return Object.keys(record).length === 0 ? null : decodeRecord(Object.entries(record).flat());
  }

  async listKeys(): Promise<KeyRecord[]> {
    const ids = (await this.client.sMembers(this.k('keys'))).sort();
    const records = await Promise.all(ids.map((id) => this.getKey(id)));
    return records.filter((record): record is KeyRecord => record !== null);
  }

  async createKey(input: NewKey): Promise<KeyRecord> {
    const record = createKeyRecord(input, this.clock());
    await this.runCreate(record, input.secret.sha256, false);
    return record;
  }

  async seedKey(input: NewKey): Promise<void> {
    await this.runCreate(createKeyRecord(input, this.clock()), input.secret.sha256, true);
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord> {
    const fields = Object.entries(patch).filter(([, value]) => value !== undefined).flatMap(([field, value]) => [field, JSON.stringify(value)]);
    try {
      return decodeRecord((await this.run(UPDATE_KEY, [this.k(`key:${id}`)], fields)) as string[]);
    } catch (err) {
      throw translateScriptError(err, id);
    }
  }

  async rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now = this.clock()): Promise<KeyRecord> {
    try {
      const record = await this.run(
        ROTATE_KEY,
        [this.k(`key:${id}`), this.k(`secrets:${id}`), this.k(`secret:${secret.sha256}`)],
        [this.prefix, id, secret.sha256, JSON.stringify(last4), String(now), String(graceMs)],
      );
      return decodeRecord(record as string[]);
    } catch (err) {
      throw translateScriptError(err, id);
    }
  }

  async reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number): Promise<ReserveResult> {
    const now = this.clock();
    const id = crypto.randomUUID();
    const units = toCreditUnitsCeil(credits);
    const [ok, spent, reserved] = (await this.run(
      RESERVE_CREDITS,
      [this.k(`credits:${keyId}:${month}`)],
      [id, String(units), String(cap === null ? -1 : toCreditUnits(cap)), String(now), String(now + ttlMs),
        String(EXPIRED_RESERVATION_MEMORY_MS), String(BUCKET_RETENTION_MS)],
    )) as [number, number, number];
    if (ok !== 1) return { ok: false, spent: fromCreditUnits(spent), reserved: fromCreditUnits(reserved), cap: cap! };
    return { ok: true, reservation: { id, keyId, month, credits }, spent: fromCreditUnits(spent) };
  }

  async renewReservation(reservation: Reservation, ttlMs: number): Promise<boolean> {
    const now = this.clock();
    const renewed = await this.run(
      RENEW_RESERVATION,
      [this.k(`credits:${reservation.keyId}:${reservation.month}`)],
      [reservation.id, String(now), String(now + ttlMs)],
    );
    return Number(renewed) === 1;
  }

  async settleCredits(reservation: Reservation, usage: UsageEntry): Promise<void> {
    const { keyId, month } = reservation;
    const now = this.clock();
    const at = bookingTime(usage.at ?? now, month);
    const units = toCreditUnits(usage.credits);
    const log = usage.log ? encodeLogRecord({ ...usage.log, time: at, credits: fromCreditUnits(units) }) : '';
    await this.pending.track(this.run(
      SETTLE_CREDITS,
      [this.k(`credits:${keyId}:${month}`), this.k(`usage:${keyId}:${month}`), this.k(`usage-day:${keyId}:${month}`), this.k('request-log')],
      [reservation.id, String(units), usage.model, String(usage.inputTokens), String(usage.outputTokens),
        String(usage.cacheCreationInputTokens), String(usage.cacheReadInputTokens), String(BUCKET_RETENTION_MS),
        utcDay(at), log, String(at), String(now - this.logRetentionMs), String(this.logRetentionMs + LOG_TTL_MARGIN_MS)],
    ));
  }

  async getMonthSpend(keyId: string, month: string): Promise<number> {
    return fromCreditUnits(Number((await this.client.hGet(this.k(`credits:${keyId}:${month}`), 'spent')) ?? 0));
  }

  async getUsage(keyId: string, month: string): Promise<UsageTotals[]> {
    return decodeUsage(await this.client.hGetAll(this.k(`usage:${keyId}:${month}`)));
  }

  // Spend visibility: usage by day, the request log, budget alerts (docs/spend.md).

  async getDailyUsage(keyId: string, month: string): Promise<DailyUsageTotals[]> {
    return decodeDailyUsage(await this.client.hGetAll(this.k(`usage-day:${keyId}:${month}`)));
  }

  async appendRequestLog(record: RequestLogRecord): Promise<void> {
    const now = this.clock();
    await this.pending.track(this.run(APPEND_REQUEST_LOG, [this.k('request-log')], [
      encodeLogRecord(record), String(Math.round(record.time)), String(now - this.logRetentionMs), String(this.logRetentionMs + LOG_TTL_MARGIN_MS),
    ]));
  }

  async readRequestLog(fromMs: number, toMs: number, cursor: string | null, limit: number): Promise<RequestLogPage> {
    const oldest = this.clock() - this.logRetentionMs;
    const start = cursor === null ? String(Math.max(0, Math.floor(fromMs))) : `(${cursor}`;
    const entries = await this.client.xRange(this.k('request-log'), start, String(Math.floor(toMs) + LOG_ID_SLACK_MS), { COUNT: limit });
    const records = decodeLogPage(entries, fromMs, toMs, oldest);
    return { records, cursor: entries.length === limit ? entries[entries.length - 1].id : null };
  }

  setRequestLogRetention(retentionMs: number): void {
    this.logRetentionMs = retentionMs;
  }

  async claimBudgetAlert(alert: BudgetAlert): Promise<boolean> {
    const pending: PendingBudgetAlert = { alert, attempts: 0 };
    const claimed = await this.run(
      CLAIM_ALERT,
      [this.k(`alert-fired:${alert.id}`), this.k('alerts-due'), this.k('alerts')],
      [alert.id, JSON.stringify(pending), String(this.clock()), String(BUCKET_RETENTION_MS)],
    );
    return Number(claimed) === 1;
  }

  async leaseBudgetAlert(now: number, leaseMs: number): Promise<PendingBudgetAlert | null> {
    const json = await this.run(LEASE_ALERT, [this.k('alerts-due'), this.k('alerts')], [String(now), String(leaseMs)]);
    return typeof json === 'string' ? (JSON.parse(json) as PendingBudgetAlert) : null;
  }

  async retryBudgetAlert(pending: PendingBudgetAlert, dueAt: number): Promise<void> {
    await this.run(RETRY_ALERT, [this.k('alerts-due'), this.k('alerts')], [pending.alert.id, JSON.stringify(pending), String(dueAt)]);
  }

  async finishBudgetAlert(id: string): Promise<void> {
    await this.client.multi().zRem(this.k('alerts-due'), id).hDel(this.k('alerts'), id).exec();
  }

  async saveResponse(record: StoredResponse, ttlMs: number): Promise<void> {
    await this.client.set(this.k(`response:${record.id}`), JSON.stringify(record), { PX: ttlMs });
  }

  async getResponse(id: string): Promise<StoredResponse | null> {
    const text = await this.client.get(this.k(`response:${id}`));
    return text === null ? null : (JSON.parse(text) as StoredResponse);
  }

  async deleteResponse(id: string): Promise<boolean> {
    return (await this.client.del(this.k(`response:${id}`))) > 0;
  }

  createRateLimitStore(): RateLimitRedisStore {
    return new RateLimitRedisStore({
      sendCommand: (...args: string[]) => this.client.sendCommand(args) as Promise<never>,
      prefix: this.k('rl:'),
    });
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    // Settlements start when a response closes; let those of the last responses reach Redis first.
    await new Promise((resolve) => setImmediate(resolve));
    await this.pending.idle();
    if (this.client.isOpen) await this.client.close();
  }

  private k(name: string): string {
    return this.prefix + name;
  }

  private async runCreate(record: KeyRecord, sha256: string, onlyIfAbsent: boolean): Promise<void> {
    const fields = encodeRecord(record);
    try {
      await this.run(
        CREATE_KEY,
        [this.k(`key:${record.id}`), this.k(`secrets:${record.id}`), this.k(`secret:${sha256}`), this.k('keys')],
        [record.id, sha256, onlyIfAbsent ? '1' : '0', ...fields],
      );
    } catch (err) {
      throw translateScriptError(err, record.id);
    }
  }

  /** EVALSHA a script, loading it first (and again after a server restart dropped its cache). */
  private async run(script: string, keys: string[], args: string[]): Promise<unknown> {
    let sha = this.scriptShas.get(script);
    if (sha) {
      try {
        return await this.client.evalSha(sha, { keys, arguments: args });
      } catch (err) {
        if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      }
    }
    sha = await this.client.scriptLoad(script);
    this.scriptShas.set(script, sha);
    return this.client.evalSha(sha, { keys, arguments: args });
  }
}
