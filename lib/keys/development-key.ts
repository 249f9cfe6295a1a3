/**
 * The development key: the uncapped key `npm start` issues when no key is configured, so a fresh clone
 * can send a request at once. Its secret is shown once, by the instance that issued it (only its
 * SHA-256 is stored), so:
 * - a store of this process alone (memory) gets a fresh secret at every start (the usage stays with it);
 * - a shared store (Redis: several instances, or a restart) keeps the one it has: the next instances
 *   issue none and say how to get one (`npm run keys -- rotate development`), so the key printed first
 *   keeps working on every instance;
 * - once a real key exists (configured, or made with the admin API, dashboard or CLI) it is retired:
 *   revoked, with a log line. Restoring it by hand works until the next key is made or the next start.
 */
import { generateSecret, hashSecret, lastFour } from './secrets';
import type { KeyRecord, KeyStore } from '../store/types';

/** The id of the development key; its name is `DEVELOPMENT_KEY_NAME`. */
export const DEVELOPMENT_KEY_ID = 'development';
const DEVELOPMENT_KEY_NAME = 'development key';

/** Whether a key is the gateway's development key (its id and name both; a key an operator names so is not). */
export function isDevelopmentKey(key: Pick<KeyRecord, 'id' | 'name'>): boolean {
  return key.id === DEVELOPMENT_KEY_ID && key.name === DEVELOPMENT_KEY_NAME;
}

/** What `issueDevelopmentKey` did: issued a secret (to show once), or left the store's key alone, or nothing. */
export type DevelopmentKeyOutcome =
  | { kind: 'issued'; secret: string }
  | { kind: 'kept'; why: string }
  | { kind: 'none' };

/**
 * Issue the development key when the store has no key but a development key (call it only when no key
 * is configured).
 * @param shared whether other processes may use the store (Redis): then an existing development key is
 *   kept, since another instance may have printed its secret
 * @param rateLimitPerMinute its rate limit (the config's default)
 */
export async function issueDevelopmentKey(store: KeyStore, shared: boolean, rateLimitPerMinute: number): Promise<DevelopmentKeyOutcome> {
  const existing = await store.listKeys();
  const onlyDevelopment = existing.length === 1 && isDevelopmentKey(existing[0]);
  if (existing.length > 0 && !onlyDevelopment) return { kind: 'none' };
  const kept: DevelopmentKeyOutcome = {
    kind: 'kept',
    why: 'this store already has a development key, issued and printed by another instance or an earlier start (its ' +
      'secret is shown only once); every instance of the store accepts it. For a new secret: npm run keys -- rotate development',
  };
  if (onlyDevelopment && shared) return kept;
  const secret = generateSecret();
  const stored = { sha256: hashSecret(secret), expiresAt: null };
  if (onlyDevelopment) {
    // This process's own store, kept from an earlier run (state file): a fresh secret, the usage stays.
    await store.rotateKey(DEVELOPMENT_KEY_ID, stored, lastFour(secret), 0);
    return { kind: 'issued', secret };
  }
  try {
    await store.createKey({
      id: DEVELOPMENT_KEY_ID, name: DEVELOPMENT_KEY_NAME, secret: stored, last4: lastFour(secret),
      rateLimitPerMinute, allowedModels: null, monthlyCreditCap: null,
    });
  } catch (err) {
    // Another instance of the store created it between the listing and here: keep theirs.
    if (shared && (await store.getKey(DEVELOPMENT_KEY_ID))) return kept;
    throw err;
  }
  return { kind: 'issued', secret };
}

/**
 * Retire (revoke) the development key when a real key exists: an active key that is not the development key.
 * @returns the retired key, or null when there was nothing to retire
 */
export async function retireDevelopmentKey(store: KeyStore): Promise<KeyRecord | null> {
  const keys = await store.listKeys();
  const development = keys.find(isDevelopmentKey);
  if (!development || development.revoked) return null;
  if (!keys.some((key) => !isDevelopmentKey(key) && !key.revoked)) return null;
  return store.updateKey(DEVELOPMENT_KEY_ID, { revoked: true });
}

/** The log line of a retirement (start, admin API, CLI). */
export const DEVELOPMENT_KEY_RETIRED =
  'development key retired (revoked): a real key exists now, so the uncapped development key no longer works';
