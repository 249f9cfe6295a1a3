/**
 * The store seam, one interface per role: keys (hashed), admission and the usage ledger, stored
 * responses and pins, the request log, the budget alert queue; `GatewayStore` is all of them. Two
 * implementations (memory: the embedded default; Redis: several instances). Every atomic operation
 * (admit, reserve, settle, revoke, rotate) is one call so the Redis version can be one script.
 */
import type { AdmissionRequest, AdmissionResult, KeySnapshot } from './admission-types';
import type { KeyPatch, KeyRecord, KeySecret, NewKey, Reservation, ReserveResult } from './records';
import type { AuditLogStore } from '../audit/audit-types';
import type { TeamCaps } from './people-caps';
export type { AdmissionRequest, AdmissionResult, KeySnapshot } from './admission-types';
export { createKeyRecord } from './records';
export type { CapLevel, KeyPatch, KeyRecord, KeySecret, NewKey, Reservation, ReserveResult } from './records';
export type { AuditDraft, AuditEntry, AuditHead, AuditLogStore } from '../audit/audit-types';
export type { TeamCaps } from './people-caps';

/** Token counts and credits of one settled request, for the ledger. */
export interface UsageEntry {
  model: string;
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  /** Credits charged. */
  credits: number;
  /**
   * When the usage is booked, epoch ms: it picks the UTC day bucket (and the request log record's
   * time). Default: the store's clock. Always moved into the reservation's month (see `bookingTime`,
   * usage-days.ts), so the day totals of a month add up to the month's.
   */
  at?: number;
  /**
   * The request log record of this request, written in the same atomic step as the totals (its
   * `time` and `credits` are replaced by the booked ones). Absent: no record (the request neither
   * reached the upstream nor was refused for its key).
   */
  log?: RequestLogRecord;
}

/** Ledger totals of one key, one model, one month. */
export interface UsageTotals extends UsageEntry {
  requests: number;
}

/** Ledger totals of one key, one model, one UTC day (`YYYY-MM-DD`). */
export interface DailyUsageTotals extends UsageTotals {
  day: string;
}

/**
 * One request that reached the upstream step, or whose identified key was refused before it, as the
 * request log keeps it. Never a prompt, a completion or a secret: only these counts and labels.
 */
export interface RequestLogRecord {
  /** When the request was booked (settled), epoch ms. */
  time: number;
  requestId: string;
  keyId: string | null;
  keyGroup: string | null;
  /** `METHOD /path`, e.g. `POST /v1/messages`. */
  route: string;
  /** Canonical catalogue ID. */
  model: string | null;
  /** HTTP status the client got. */
  status: number;
  stopReason: string | null;
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  /** Credits charged (the same figure the ledger got). */
  credits: number;
  /** Arrival to first reply byte, ms; null when no byte was written. */
  firstByteMs: number | null;
  /** Arrival to the response closing, ms. */
  durationMs: number;
  streamed: boolean;
  /** The client closed the connection before the reply was complete. */
  clientAborted: boolean;
  /** The client's agent session (lib/observability/session-id.ts: bounded, client-supplied); null when none was sent. */
  sessionId: string | null;
  /** The agent or subagent that sent it, where the client says; null otherwise. */
  agentId: string | null;
  /** Id of the upstream target that served the request (`upstream.targets[].id`); null when none answered. */
  upstreamTarget: string | null;
  /** The error the client got: its native type (`rate_limit_error`, the upstream's `overloaded_error`, ...); null on success. */
  errorType?: string | null;
  /** That error's message, one line, at most 500 characters; null on success. */
  errorMessage?: string | null;
  /**
   * The upstream attempts once one failed, e.g. `a:529 overloaded_error (Overloaded) -> b:ECONNREFUSED`
   * (target id, status or socket error, the upstream's error type and message); null when the first
   * attempt served the request (or none was made). The three are absent from records written
   * before they existed.
   */
  upstreamAttempts?: string | null;
}

/** One page of the request log, in the order written; `cursor` continues after it (null: no more). */
export interface RequestLogPage {
  records: RequestLogRecord[];
  cursor: string | null;
}

/** A budget alert: a key's (or, with `team`, a team's: its cap and ledger) monthly spend crossed `threshold` percent of its cap. */
export interface BudgetAlert {
  /** `<keyId>:<month>:<threshold>` (a team's: `team:<team>:<month>:<threshold>`): one per key or team, month and threshold, ever. */
  id: string;
  keyId: string; // the key whose settlement crossed it
  keyName: string;
  team?: string;
  /** Percent of the cap. */
  threshold: number;
  /** Settled credits of the month when the threshold was crossed. */
  spent: number;
  cap: number;
  /** UTC month, `YYYY-MM`. */
  month: string;
  /** Epoch ms of the crossing. */
  crossedAt: number;
}

/** A budget alert waiting for delivery (kept in the store until sent or given up). */
export interface PendingBudgetAlert {
  alert: BudgetAlert;
  /** Delivery attempts made so far. */
  attempts: number;
}

/**
 * A response of the Responses route kept for `previous_response_id` and `GET`/`DELETE
 * /v1/responses/{id}` (docs/responses.md). Plain JSON; it counts toward nothing else.
 */
export interface StoredResponse {
  /** `resp_...` */
  id: string;
  /** The key that made it: only this key may read, continue or delete it. */
  keyId: string;
  /** The `response` object as the client received it (the body of GET). */
  response: Record<string, unknown>;
  /** The conversation: every input item so far, then this response's output items (with encrypted_content). */
  items: unknown[];
  /**
   * The session the chain belongs to (lib/observability/session-id.ts, else the chain root's response id): a
   * response continuing this one without a session id of its own is counted in it. Absent on older records.
   */
  sessionId?: string;
}

/**
 * An object the upstream keeps for the gateway's credential that only the key which made it may see
 * (a message batch, a file): its id, that key, and what the gateway needs to know of it.
 */
export interface PinnedObject {
  /** `batch` (Message Batches) or `file` (Files). */
  kind: 'batch' | 'file';
  /** The upstream's id (`msgbatch_...`, `file_...`). */
  id: string;
  keyId: string;
  /** What the route keeps about it (JSON). */
  data: Record<string, unknown>;
}

/** Keys: finding a request's key (auth) and changing keys (admin API, `npm run keys`, config seeding). */
export interface KeyStore {
  /** The key one of whose live secrets hashes to `sha256`; expired rotated secrets never match. */
  findKeyBySecretHash(sha256: string, now?: number): Promise<KeyRecord | null>;
  /**
   * Like findKeyBySecretHash, with the record's version; unless `fresh`, it may answer from the record
   * as this process last saw it (no round trip), for a request whose admission (`admit`) follows and
   * checks that snapshot in the store. A revoked snapshot is always read again before it is returned.
   */
  identifyKey(sha256: string, now: number, fresh?: boolean): Promise<KeySnapshot | null>;
  getKey(id: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Creates a key. @throws Error when the id exists. */
  createKey(input: NewKey): Promise<KeyRecord>;
  /** @throws Error when the key does not exist. */
  updateKey(id: string, patch: KeyPatch): Promise<KeyRecord>;
  /**
   * Makes `secret` the key's only secret, at once (no grace: a key declared in config.json whose
   * secret the file replaced), with `last4`. One more version when it changed. When `secret` is the
   * current secret already, only other current secrets go: a secret in its rotation grace (rotated
   * at run time before the key was declared) keeps its expiry.
   * @returns whether the secrets changed (false: it already was the only, current secret; nothing written)
   * @throws Error when the key does not exist or the secret belongs to another key
   */
  replaceSecret(id: string, secret: KeySecret, last4: string): Promise<boolean>;
  /** Adds `secret` as the current secret; earlier current secrets expire `graceMs` from `now`. */
  rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now?: number): Promise<KeyRecord>;
}

/** Admission and ledger: a request's count and credit hold before its upstream call, its settlement after, and the spend read back (months, UTC days). */
export interface LedgerStore {
  /**
   * Check a request's key snapshot and secret, count it against the key's rate limit and hold its
   * credits, all in one atomic step (Redis: one script, one round trip). See AdmissionResult.
   */
  admit(request: AdmissionRequest): Promise<AdmissionResult>;
  /**
   * Atomically hold `credits` against `cap` in the key's month bucket: succeeds when spent + reserved + credits <= cap (a null cap always succeeds). With
   * `minCredits` (<= credits), when `credits` do not fit but `minCredits` do, holds all that is left (cap - spent - reserved) instead; the reservation's
   * `credits` say what was held. Holds expire after `ttlMs`. `deadline` (epoch ms) is AdmissionRequest.deadline's: past it the Redis store holds nothing
   * and throws. With `teamCaps` (a key in a team), the same hold is taken in the member's and the team's month ledgers in the same step and must fit their
   * caps too (people-caps.ts); refused, `limit` names the cap.
   */
  reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number, deadline?: number, teamCaps?: TeamCaps): Promise<ReserveResult>;
  /**
   * Extend a live hold to `ttlMs` from now, for a request still in flight (a long stream), so its
   * credits keep counting against the cap until it settles. Returns false when the hold has already
   * expired or been settled (it is not brought back: that would skip the cap check).
   */
  renewReservation(reservation: Reservation, ttlMs: number): Promise<boolean>;
  /**
   * Release a reservation and record the real usage (once; a second call for the same reservation is
   * ignored). A reservation that already expired is still recorded, since its usage was paid for.
   */
  settleCredits(reservation: Reservation, usage: UsageEntry): Promise<void>;
  /** Credits spent by a key in a month (settled only). */
  getMonthSpend(keyId: string, month: string): Promise<number>;
  /** Credits settled in a month on a team's ledger, or with `owner` on that member's (people-caps.ts). */
  getTeamMonthSpend(team: string, month: string, owner?: string): Promise<number>;
  /** Ledger of a key for a month, per model. */
  getUsage(keyId: string, month: string): Promise<UsageTotals[]>;
  /** Ledger of a key for a month, per UTC day and model. */
  getDailyUsage(keyId: string, month: string): Promise<DailyUsageTotals[]>;
}

/** Stored responses (Responses API, tool-loop thinking) and the pins of objects owned by a key (files, message batches), each kept for a time. */
export interface ResponseStore {
  /**
   * Keep a response for `ttlMs` (replacing one with the same id).
   * @param maxKeyBytes most bytes (of the records as JSON) the record's key may hold; absent: no bound.
   * @returns false when the record was not kept because its key would hold more than `maxKeyBytes`
   */
  saveResponse(record: StoredResponse, ttlMs: number, maxKeyBytes?: number): Promise<boolean>;
  /** The stored response with this id, or null when there is none or its time is up. */
  getResponse(id: string): Promise<StoredResponse | null>;
  /** Delete a stored response; false when there was none. */
  deleteResponse(id: string): Promise<boolean>;
  /** Keep `pin` (replacing one of the same kind and id) for `ttlMs`. */
  savePin(pin: PinnedObject, ttlMs: number): Promise<void>;
  /** The pin of this kind and id, or null when there is none or its time is up. */
  getPin(kind: PinnedObject['kind'], id: string): Promise<PinnedObject | null>;
  /** The pins of this kind for `ids`, in their order (null where there is none), in one call (a batch's files). */
  getPins(kind: PinnedObject['kind'], ids: readonly string[]): Promise<Array<PinnedObject | null>>;
  /** Forget a pin; false when there was none. */
  deletePin(kind: PinnedObject['kind'], id: string): Promise<boolean>;
}

/** The request log: one record per finished request, read back by time range (admin export, session usage). */
export interface RequestLogStore {
  /** Add a record to the request log for a request that settles nothing (count_tokens). */
  appendRequestLog(record: RequestLogRecord): Promise<void>;
  /**
   * Records with `fromMs <= time < toMs` in the order they were written (time order, but for clocks
   * that differ between instances), at most `limit` looked at per page (so a page may hold fewer, even
   * none, with a cursor to go on); pass the page's `cursor` back for the next. Records older than the retention (`setRequestLogRetention`) are gone.
   */
  readRequestLog(fromMs: number, toMs: number, cursor: string | null, limit: number): Promise<RequestLogPage>;
  /** How long request log records are kept (ms) and, for the memory store, at most how many. */
  setRequestLogRetention(retentionMs: number, maxRecords?: number): void;
}

/** The budget alert queue: claimed once, leased for delivery by one instance, retried or finished. */
export interface AlertQueueStore {
  /**
   * Atomically: when no alert with `alert.id` was ever claimed, remember it and keep it as pending
   * (due at once); returns whether this call claimed it. Every instance may ask; one wins.
   */
  claimBudgetAlert(alert: BudgetAlert): Promise<boolean>;
  /**
   * Atomically take the next pending alert due at `now` for `leaseMs` (no other caller gets it until
   * then, so an instance that dies mid-delivery hands it on); null when none is due.
   */
  leaseBudgetAlert(now: number, leaseMs: number): Promise<PendingBudgetAlert | null>;
  /** Put a leased alert back, due again at `dueAt` (epoch ms), with its attempt count. */
  retryBudgetAlert(pending: PendingBudgetAlert, dueAt: number): Promise<void>;
  /** Forget a pending alert (delivered or given up); it is still never claimed again. */
  finishBudgetAlert(id: string): Promise<void>;
}

/** The store as a service: its kind, reachability and shutdown. */
export interface StoreConnection {
  /** Which implementation this is (`memory` or `redis`), for /health and logs. */
  readonly kind: string;
  /** Throws when the backing service is unreachable. */
  ping(): Promise<void>;
  /** Waits for operations under way (settlements of closing requests), then releases the connection. */
  close(): Promise<void>;
}

/**
 * The whole store: every role above, implemented by one object (the memory and Redis stores, or a
 * custom store passed to `createGateway`). Each pipeline step is typed with the roles it uses, so its
 * reader sees only what it may touch.
 */
export type GatewayStore = KeyStore & LedgerStore & ResponseStore & RequestLogStore & AlertQueueStore & AuditLogStore & StoreConnection;
