/**
 * The store seam: keys (hashed), credit reservations and the usage ledger. One interface, two
 * implementations (memory: the embedded default; Redis: several instances). Every atomic operation
 * (reserve, settle, revoke, rotate) is one call so the Redis version can be one script.
 */
import type { Store as RateLimitStore } from 'express-rate-limit';

/** A key as the gateway knows it. Never holds a secret, only hashes of secrets. */
export interface KeyRecord {
  id: string;
  name: string;
  /** Last 4 characters of the newest secret, for display and logs. */
  last4: string;
  /** ISO 8601 creation time. */
  createdAt: string;
  revoked: boolean;
  /** Requests per minute. */
  rateLimitPerMinute: number;
  /** Catalogue IDs the key may use; null means all. */
  allowedModels: string[] | null;
  /** Credits per UTC calendar month; null means no cap. */
  monthlyCreditCap: number | null;
  /** Key group (prefix family); `default` for `sk-cs4-` keys. */
  keyGroup: string;
}

/** A secret of a key: its SHA-256 (hex) and, for a rotated-out secret, when it stops working. */
export interface KeySecret {
  sha256: string;
  /** Epoch ms after which this secret fails; null while it is the current secret. */
  expiresAt: number | null;
}

/** Fields to create a key with; the caller hashes the secret. */
export interface NewKey {
  id: string;
  name?: string;
  secret: KeySecret;
  last4: string;
  rateLimitPerMinute: number;
  allowedModels: string[] | null;
  monthlyCreditCap: number | null;
  revoked?: boolean;
  keyGroup?: string;
  /** ISO time; default now. */
  createdAt?: string;
}

/** The record a new key starts with: defaults for the optional fields, `createdAt` from `now` (epoch ms). */
export function createKeyRecord(input: NewKey, now: number): KeyRecord {
  return {
    id: input.id,
    name: input.name ?? input.id,
    last4: input.last4,
    createdAt: input.createdAt ?? new Date(now).toISOString(),
    revoked: input.revoked ?? false,
    rateLimitPerMinute: input.rateLimitPerMinute,
    allowedModels: input.allowedModels ? [...input.allowedModels] : null,
    monthlyCreditCap: input.monthlyCreditCap,
    keyGroup: input.keyGroup ?? 'default',
  };
}

export type KeyPatch = Partial<Pick<KeyRecord, 'name' | 'rateLimitPerMinute' | 'allowedModels' | 'monthlyCreditCap' | 'revoked'>>;

/** Credits held against a key's monthly cap while a request is in flight. */
export interface Reservation {
  id: string;
  keyId: string;
  /** UTC month bucket, `YYYY-MM`. */
  month: string;
  /** Credits held (the request's worst case). */
  credits: number;
  /**
   * The request holding them, set by the credit step (stores neither need nor keep it): lines about
   * the reservation written later, outside the request's own steps, name it.
   */
  requestId?: string;
}

export type ReserveResult =
  | { ok: true; reservation: Reservation; spent: number }
  | { ok: false; spent: number; reserved: number; cap: number };

/** Token counts and credits of one settled request, for the ledger. */
export interface UsageEntry {
  model: string;
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  /** Credits charged. */
  credits: number;
}

/** Ledger totals of one key, one model, one month. */
export interface UsageTotals extends UsageEntry {
  requests: number;
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
}

export interface GatewayStore {
  /** Which implementation this is (`memory` or `redis`), for /health and logs. */
  readonly kind: string;
  /** The key one of whose live secrets hashes to `sha256`; expired rotated secrets never match. */
  findKeyBySecretHash(sha256: string, now?: number): Promise<KeyRecord | null>;
  getKey(id: string): Promise<KeyRecord | null>;
  listKeys(): Promise<KeyRecord[]>;
  /** Creates a key. @throws Error when the id exists. */
  createKey(input: NewKey): Promise<KeyRecord>;
  /** Creates the key if absent, else leaves it as it is (config keys are seeded this way). */
  seedKey(input: NewKey): Promise<void>;
  /** @throws Error when the key does not exist. */
  updateKey(id: string, patch: KeyPatch): Promise<KeyRecord>;
  /** Adds `secret` as the current secret; earlier current secrets expire `graceMs` from `now`. */
  rotateKey(id: string, secret: KeySecret, last4: string, graceMs: number, now?: number): Promise<KeyRecord>;
  /**
   * Atomically hold `credits` against `cap` in the key's month bucket: succeeds when
   * spent + reserved + credits <= cap (a null cap always succeeds). Holds expire after `ttlMs`.
   */
  reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number): Promise<ReserveResult>;
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
  /** Ledger of a key for a month, per model. */
  getUsage(keyId: string, month: string): Promise<UsageTotals[]>;
  /**
   * A fresh express-rate-limit counter store on the same backing service (memory: this process only;
   * Redis: shared by every instance, so a key gets its limit once across all of them).
   */
  createRateLimitStore(): RateLimitStore;
  /** Keep a response for `ttlMs` (replacing one with the same id). */
  saveResponse(record: StoredResponse, ttlMs: number): Promise<void>;
  /** The stored response with this id, or null when there is none or its time is up. */
  getResponse(id: string): Promise<StoredResponse | null>;
  /** Delete a stored response; false when there was none. */
  deleteResponse(id: string): Promise<boolean>;
  /** Throws when the backing service is unreachable. */
  ping(): Promise<void>;
  /** Waits for operations under way (settlements of closing requests), then releases the connection. */
  close(): Promise<void>;
}
