/**
 * Key management operations on any store: create, rotate, revoke, change limits. The key CLI uses
 * them (and so can an admin API). Secrets are generated here, returned once, and stored only as
 * SHA-256 hashes.
 */
import { generateSecret, hashSecret, lastFour, randomBase62 } from '../keys/secrets';
import { checkDeclaredKeyChange } from './declared-keys';
import type { KeyPatch, KeyRecord, KeyStore } from './types';

/** Default grace period of a rotated-out secret: 24 h. */
export const DEFAULT_ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

export interface CreateApiKeyInput {
  /** Key id (letters, digits, `.`, `_`, `-`). Default: `key_` + 12 random characters. */
  id?: string;
  name?: string;
  /** Requests per minute. */
  rateLimitPerMinute: number;
  /** Catalogue IDs; null: every model. */
  allowedModels?: string[] | null;
  /** Credits per UTC month; null: no cap. */
  monthlyCreditCap?: number | null;
  /** Key group id. Default `default`. */
  keyGroup?: string;
  /** Prefix of the secret: the key group's. Default `sk-cs4-`. */
  keyPrefix?: string;
  /** The member (OIDC subject) the key belongs to; absent: none. */
  owner?: string | null;
  /** The team the key belongs to; absent: none. */
  team?: string | null;
}

/** A key and the secret that was just issued for it (shown once, never stored). */
export interface IssuedKey {
  key: KeyRecord;
  secret: string;
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Create a key with a new secret.
 * @throws Error when the id is malformed or taken, or a limit is not a valid number
 */
export async function createApiKey(store: KeyStore, input: CreateApiKeyInput): Promise<IssuedKey> {
  const id = input.id ?? `key_${randomBase62(12)}`;
  if (!KEY_ID.test(id)) throw new Error(`key id "${id}" may hold only letters, digits, ".", "_" and "-" (at most 64)`);
  checkLimits({ rateLimitPerMinute: input.rateLimitPerMinute, monthlyCreditCap: input.monthlyCreditCap ?? null });
  const secret = generateSecret(input.keyPrefix);
  const key = await store.createKey({
    id,
    name: input.name,
    secret: { sha256: hashSecret(secret), expiresAt: null },
    last4: lastFour(secret),
    rateLimitPerMinute: input.rateLimitPerMinute,
    allowedModels: input.allowedModels ?? null,
    monthlyCreditCap: input.monthlyCreditCap ?? null,
    keyGroup: input.keyGroup,
    owner: input.owner,
    team: input.team,
  });
  return { key, secret };
}

/**
 * Issue a new secret for a key (same id, limits and usage). The secrets in use until now keep working
 * for `graceMs`, then fail; a secret already in its grace period keeps its own expiry.
 * @param keyPrefix prefix of the new secret: the key group's (default `sk-cs4-`)
 * @throws Error when the key does not exist or graceMs is negative
 * @throws DeclaredKeyError when config.json sets the key's secret
 */
export async function rotateApiKey(
  store: KeyStore, id: string, graceMs = DEFAULT_ROTATION_GRACE_MS, now?: number, keyPrefix?: string,
): Promise<IssuedKey> {
  if (!Number.isFinite(graceMs) || graceMs < 0) throw new Error('the grace period must be 0 or more milliseconds');
  checkDeclaredKeyChange(await requireKey(store, id), ['secret']);
  const secret = generateSecret(keyPrefix);
  const key = await store.rotateKey(id, { sha256: hashSecret(secret), expiresAt: null }, lastFour(secret), graceMs, now);
  return { key, secret };
}

/**
 * Revoke a key: its next request, on any instance, gets 401. Kept as a run-time revocation, apart
 * from config.json's `revoked`, so no start or reload undoes it.
 * @throws Error when it does not exist
 */
export function revokeApiKey(store: KeyStore, id: string): Promise<KeyRecord> {
  return store.updateKey(id, { revoked: true, revokedAtRunTime: true });
}

/**
 * Undo a run-time revocation.
 * @throws Error when the key does not exist
 * @throws DeclaredKeyError when config.json itself revokes the key
 */
export async function restoreApiKey(store: KeyStore, id: string): Promise<KeyRecord> {
  const key = await requireKey(store, id);
  checkDeclaredKeyChange(key, ['restore']);
  // A key no longer in config.json keeps no revocation of the file's: a restore brings it back.
  const fileRevoked = key.declaredIn ? key.fileRevoked === true : false;
  return store.updateKey(id, { revoked: fileRevoked, revokedAtRunTime: false, fileRevoked });
}

/**
 * Change a key's limits; fields left undefined keep their value, null removes the cap or the whitelist.
 * @throws Error when the key does not exist or a limit is not a valid number
 * @throws DeclaredKeyError when config.json sets one of the fields
 */
export async function setKeyLimits(
  store: KeyStore,
  id: string,
  limits: Pick<KeyPatch, 'rateLimitPerMinute' | 'monthlyCreditCap' | 'allowedModels' | 'name' | 'alertThresholds' | 'team' | 'owner'>,
): Promise<KeyRecord> {
  checkLimits(limits);
  checkDeclaredKeyChange(await requireKey(store, id), Object.keys(limits).filter((field) => limits[field as keyof typeof limits] !== undefined));
  return store.updateKey(id, limits);
}

async function requireKey(store: KeyStore, id: string): Promise<KeyRecord> {
  const key = await store.getKey(id);
  if (!key) throw new Error(`key "${id}" does not exist`);
  return key;
}

function checkLimits(limits: Pick<KeyPatch, 'rateLimitPerMinute' | 'monthlyCreditCap'>): void {
  const rpm = limits.rateLimitPerMinute;
  if (rpm !== undefined && (!Number.isInteger(rpm) || rpm < 1)) throw new Error('the rate limit must be a whole number of requests per minute, 1 or more');
  const cap = limits.monthlyCreditCap;
  if (cap !== undefined && cap !== null && (!Number.isFinite(cap) || cap < 0)) throw new Error('the monthly credit cap must be a number of credits, 0 or more');
}
