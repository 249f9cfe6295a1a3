/** Store selection and seeding of the keys declared in config.json. */
import fs from 'node:fs';
import type { GatewayConfig } from '../config';
import { MemoryStore } from './memory-store';
import { systemClock, type Clock } from './month';
import { RedisStore } from './redis-store';
import { syncDeclaredKeys, type DeclaredKeyChange } from './declared-keys';
import { recordDeclaredKeyChanges } from '../audit/config-audit';
import type { AuditLogStore, GatewayStore, KeyStore } from './types';

export type { GatewayStore } from './types';
export { MemoryStore } from './memory-store';
export { RedisStore } from './redis-store';

export interface CreateStoreOptions {
  /** Clock for rotation expiry and reservation holds, epoch ms. Default: the real clock. */
  clock?: Clock;
  /** Told about Redis connection errors (the client reconnects by itself). */
  onError?: (err: Error) => void;
}

/**
 * The store the configuration asks for: Redis when `REDIS_URL` or `REDIS_CLUSTER_NODES` is set (keys
 * under `REDIS_PREFIX`), else memory (the embedded default, one process).
 * @throws Error when Redis is configured but cannot be reached, or its CA file cannot be read
 */
export async function createStore(config: GatewayConfig, options: CreateStoreOptions = {}): Promise<GatewayStore> {
  const clock = options.clock ?? systemClock;
  if (config.redisUrl || config.redisClusterNodes) {
    return RedisStore.connect({
      url: config.redisUrl ?? undefined,
      clusterNodes: config.redisClusterNodes ?? undefined,
      tlsCa: config.redisTlsCaFile ? readTlsCa(config.redisTlsCaFile) : undefined,
      connectTimeoutMs: config.redisConnectTimeoutMs,
      prefix: config.redisPrefix,
      clock,
      onError: options.onError,
    });
  }
  return new MemoryStore(clock);
}

/**
 * Put the config.json keys in the store, as the file sets them (declared-keys.ts): at every start and
 * reload. With `createOnly` (the CLI), only keys missing from the store are made. Each key changed is
 * recorded in the audit log, actor `config` (lib/audit/config-audit.ts).
 * @returns the changes made, one per field, for the log
 */
export async function seedConfigKeys(store: KeyStore & AuditLogStore, config: GatewayConfig, createOnly = false): Promise<DeclaredKeyChange[]> {
  const changes = await syncDeclaredKeys(store, config, createOnly);
  await recordDeclaredKeyChanges(store, changes);
  return changes;
}

/**
 * The PEM text of REDIS_TLS_CA.
 * @throws Error naming the file when it cannot be read
 */
function readTlsCa(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read REDIS_TLS_CA file ${file}: ${(err as Error).message}`);
  }
}
