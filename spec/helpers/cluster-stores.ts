/**
 * Redis stores on a Redis Cluster started for one describe block (startRedisCluster), each test under
 * a prefix of its own: `connect()` gives a store with its connection and key names (the key-move specs
 * drive lib/store/redis-key-move.ts through them); every store is closed and the prefix deleted after
 * each test. Call inside a `describe`.
 */
import type { RedisConnection } from '../../lib/store/redis-connection';
import { RedisKeys } from '../../lib/store/redis-keys';
import { RedisStore } from '../../lib/store/redis-store';
import { startRedisCluster } from './redis-cluster';
import { useServer } from './redis-process';
import { deleteRedisPrefix, uniqueRedisPrefix } from './redis';

export interface ClusterStore {
  store: RedisStore;
  connection: RedisConnection;
  keys: RedisKeys;
}

export function useClusterStores(name: string): () => Promise<ClusterStore> {
  const cluster = useServer(startRedisCluster);
  let prefix = '';
  let stores: RedisStore[] = [];
  beforeEach(() => (prefix = uniqueRedisPrefix(name)));
  afterEach(async () => {
    for (const store of stores) await store.close().catch(() => undefined);
    stores = [];
    await deleteRedisPrefix(prefix).catch(() => undefined);
  });
  return async () => {
    const store = await RedisStore.connect({ clusterNodes: [...cluster().urls], prefix });
    stores.push(store);
    return { store, connection: (store as unknown as { connection: RedisConnection }).connection, keys: new RedisKeys(prefix) };
  };
}
