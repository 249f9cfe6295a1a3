/** Store selection and seeding of the keys declared in config.json. */
import type { GatewayConfig } from '../config';
import { hashSecret, lastFour } from '../keys';
import { MemoryStore } from './memory-store';
import type { GatewayStore } from './types';

export type { GatewayStore } from './types';
export { MemoryStore } from './memory-store';

/** The store the configuration asks for: memory (the embedded default). */
export async function createStore(_config: GatewayConfig): Promise<GatewayStore> {
  return new MemoryStore();
}

/**
 * Put the config.json keys in the store. A key already there keeps its run-time state (rotations,
 * revocation, limits changed since); a new one is created with the file's settings.
 */
export async function seedConfigKeys(store: GatewayStore, config: GatewayConfig): Promise<void> {
  for (const key of config.keys) {
    const sha256 = key.keySha256 ?? hashSecret(key.key!);
    await store.seedKey({
      id: key.id,
      name: key.name,
      secret: { sha256, expiresAt: null },
      last4: key.key ? lastFour(key.key) : sha256.slice(-4),
      rateLimitPerMinute: key.rateLimitPerMinute ?? config.defaults.rateLimitPerMinute,
      allowedModels: key.allowedModels ?? null,
      monthlyCreditCap: key.monthlyCreditCap ?? null,
      revoked: key.revoked ?? false,
      keyGroup: key.keyGroup,
    });
  }
}
