/** The people role's contract (spec/helpers/people-store-contract.ts) on a real Redis. */
import type { RedisStore } from '../../lib/store/redis-store';
import { describePeopleStoreContract } from '../helpers/people-store-contract';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

describePeopleStoreContract('Redis', async () => {
  const store = await connectTestRedisStore(uniqueRedisPrefix('people'));
  return {
    people: store.people,
    wait: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    close: async () => {
      await store.close();
      await deleteRedisPrefix((store as RedisStore).prefix);
    },
  };
});
