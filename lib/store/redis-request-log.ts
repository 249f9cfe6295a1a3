/**
 * The request log of the Redis store (a stream, `request-log`) and, on a Redis Cluster, the outbox that
 * makes a settlement and its record one atomic step although the log is in another slot: the
 * settlement script (SETTLE_CREDITS) writes the record into the key's own outbox (`{<id>}:log-outbox`, a team key's under its team's tag, `{team:<team>}:k:<id>:log-outbox`)
 * in the same step as the spend; the settling instance then moves it into the log (MOVE_LOG_RECORD,
 * once per record id, so a repeated move appends nothing) and deletes it from the outbox. A record a
 * crash or a failure left in an outbox is moved by the sweep every instance runs at start and every
 * SWEEP_EVERY_MS. On one server the settlement script appends the record itself.
 */
import type { InFlight } from '../http/in-flight';
import type { Clock } from './month';
import type { RedisConnection } from './redis-connection';
import type { RedisKeys } from './redis-keys';
import { locateKey } from './redis-key-move';
import { APPEND_REQUEST_LOG, MOVE_LOG_RECORD } from './redis-scripts';
import { decodeLogPage, encodeLogRecord, LOG_ID_SLACK_MS } from './redis-spend';
import { DEFAULT_REQUEST_LOG_RETENTION_MS } from './memory-spend';
import type { RequestLogPage, RequestLogRecord } from './types';

/** The ttl of a `request-log` stream past its retention (so an idle deployment's log goes away): 1 day. */
const LOG_TTL_MARGIN_MS = 24 * 60 * 60 * 1000;
/** How often every instance sweeps the outboxes, ms: 30 s. */
export const SWEEP_EVERY_MS = 30_000;
/** Waits before each new try of a move that failed, ms (then the sweep): 0.5 to 8 s, past a Redis Cluster failover. */
const MOVE_RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000];
/** How long a moved record id is remembered (a repeated move within it appends nothing): 1 day, past any sweep. */
const MOVED_MEMORY_MS = 24 * 60 * 60 * 1000;

/** The APPEND_LOG_LUA arguments of one record (redis-scripts.ts): record JSON, booking ms, oldest id to keep, log ttl. */
type LogArgs = [string, string, string, string];

export class RedisRequestLog {
  private retentionMs = DEFAULT_REQUEST_LOG_RETENTION_MS;
  private sweeping: NodeJS.Timeout | undefined;
  /** Timers of moves tried again (retryMove); cleared by stopSweeping. */
  private readonly retries = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly keys: RedisKeys,
    private readonly clock: Clock,
    private readonly pending: InFlight,
    private readonly onError?: (err: Error) => void,
  ) {}

  setRetention(retentionMs: number): void {
    this.retentionMs = retentionMs;
  }

  /** The APPEND_LOG_LUA arguments for `record` written at `now` (epoch ms). */
  private argsOf(record: RequestLogRecord, now: number): LogArgs {
    return [encodeLogRecord(record), String(Math.round(record.time)), String(now - this.retentionMs), String(this.retentionMs + LOG_TTL_MARGIN_MS)];
  }

  /** Append one record on its own (a request with nothing to settle). */
  async append(record: RequestLogRecord): Promise<void> {
    await this.connection.run(APPEND_REQUEST_LOG, [this.keys.requestLog], this.argsOf(record, this.clock()));
  }

  /**
   * The fifth key and the arguments SETTLE_CREDITS takes to write `record` in the settlement's own step:
   * the log itself on one server, the key's outbox (entry `recordId`) on a cluster.
   */
  settlementPart(keyId: string, team: string | null | undefined, recordId: string, record: RequestLogRecord, now: number): { key: string; args: string[] } {
    const args = this.argsOf(record, now);
    if (this.connection.mode === 'single') return { key: this.keys.requestLog, args };
    return { key: this.keys.logOutbox(keyId, team), args: [recordId, JSON.stringify(args), String(this.retentionMs + LOG_TTL_MARGIN_MS)] };
  }

  /**
   * After a settlement that took effect on a cluster: move its record out of the outbox now. A failure
   * leaves it there for the sweep (reported through onError, never rejects).
   */
  async afterSettlement(keyId: string, team: string | null | undefined, recordId: string): Promise<void> {
    if (this.connection.mode === 'single') return;
    const outbox = this.keys.logOutbox(keyId, team);
    await this.moveFrom(outbox, [recordId]).catch((err: Error) => {
      this.onError?.(new Error(`request log record ${recordId} left in its outbox, tried again shortly: ${err.message}`));
      this.retryMove(outbox, recordId, 0);
    });
  }

  /**
   * Try a failed move out of `outbox` again after MOVE_RETRY_DELAYS_MS[attempt] (a failover takes a few
   * seconds), so a record is in the log within seconds, not at the next sweep; after the last, the sweep
   * moves it (a key that changed team meanwhile took its outbox along: the sweep finds it there).
   */
  private retryMove(outbox: string, recordId: string, attempt: number): void {
    const delay = MOVE_RETRY_DELAYS_MS[attempt];
    if (delay === undefined || this.closed) return;
    const timer = setTimeout(() => {
      this.retries.delete(timer);
      this.moveFrom(outbox, [recordId]).catch(() => this.retryMove(outbox, recordId, attempt + 1));
    }, delay).unref();
    this.retries.add(timer);
  }

  /**
   * Move the records `ids` (all when absent) of the outbox `outbox` (a key's, RedisKeys.logOutbox)
   * into the log, each once, and delete them from the outbox.
   * @returns how many records were appended (a record moved before is deleted, not appended)
   * @throws Error when Redis fails (what is left stays in the outbox)
   */
  private async moveFrom(outbox: string, ids?: string[]): Promise<number> {
    const entries: Array<readonly [string, string | null | undefined]> = ids
      ? await Promise.all(ids.map(async (id) => [id, await this.connection.commands.hGet(outbox, id)] as const))
      : Object.entries(await this.connection.commands.hGetAll(outbox));
    let appended = 0;
    for (const [id, json] of entries) {
      if (typeof json !== 'string') continue;
      const args = JSON.parse(json) as LogArgs;
      appended += Number(await this.connection.run(MOVE_LOG_RECORD, [this.keys.requestLog, this.keys.logMoved],
        [id, ...args, String(this.clock()), String(MOVED_MEMORY_MS)]));
      await this.connection.commands.hDel(outbox, id);
    }
    return appended;
  }

  /**
   * Move every record left in any key's outbox into the log (each once).
   * @returns how many records were appended
   * @throws Error when Redis fails
   */
  async sweep(): Promise<number> {
    if (this.connection.mode === 'single') return 0;
    let appended = 0;
    for (const keyId of await this.connection.commands.sMembers(this.keys.keys)) {
      appended += await this.moveFrom(this.keys.logOutbox(keyId));
      // A team key's settlements write to the outbox under its team's tag (redis-key-move.ts).
      const team = await locateKey(this.connection, this.keys, keyId);
      if (team) appended += await this.moveFrom(this.keys.logOutbox(keyId, team));
    }
    return appended;
  }

  /** Sweep now and every SWEEP_EVERY_MS until `stop` (cluster only); failures go to onError. */
  startSweeping(): void {
    if (this.connection.mode === 'single' || this.sweeping) return;
    const run = () => void this.pending.track(this.sweep()).catch((err: Error) => this.onError?.(new Error(`request log outbox sweep failed: ${err.message}`)));
    run();
    this.sweeping = setInterval(run, SWEEP_EVERY_MS).unref();
  }

  /** No more sweeps or retried moves (what is left in an outbox waits for the next start's sweep). */
  stopSweeping(): void {
    clearInterval(this.sweeping);
    this.sweeping = undefined;
    this.closed = true;
    for (const timer of this.retries) clearTimeout(timer);
    this.retries.clear();
  }

  /** A page of the records in [fromMs, toMs) (RequestLogStore.readRequestLog). */
  async read(fromMs: number, toMs: number, cursor: string | null, limit: number): Promise<RequestLogPage> {
    const oldest = this.clock() - this.retentionMs;
    const start = cursor === null ? String(Math.max(0, Math.floor(fromMs))) : `(${cursor}`;
    const entries = await this.connection.commands.xRange(this.keys.requestLog, start, String(Math.floor(toMs) + LOG_ID_SLACK_MS), { COUNT: limit });
    const records = decodeLogPage(entries, fromMs, toMs, oldest);
    return { records, cursor: entries.length === limit ? entries[entries.length - 1].id : null };
  }
}
