/**
 * The development key (lib/keys/development-key.ts): issued once per store that may be shared, a fresh secret
 * per start for this process's own store, and retired when a real key exists.
 */
import { expect } from 'chai';
import { DEVELOPMENT_KEY_ID, issueDevelopmentKey, retireDevelopmentKey } from '../../lib/keys/development-key';
import { hashSecret } from '../../lib/keys/secrets';
import { createApiKey } from '../../lib/store/key-admin';
import { MemoryStore } from '../../lib/store/memory-store';

const secretWorks = async (store: MemoryStore, secret: string) => {
  const found = await store.identifyKey(hashSecret(secret), Date.now(), true);
  return found !== null && !found.key.revoked;
};

describe('development key', () => {
  it('a shared store keeps the key the first instance issued: the next ones issue none and say how to get one', async () => {
    const store = new MemoryStore();
    const first = await issueDevelopmentKey(store, true, 60);
    expect(first.kind).to.equal('issued');
    const second = await issueDevelopmentKey(store, true, 60);
    expect(second).to.deep.include({ kind: 'kept' });
    expect(second.kind === 'kept' && second.why).to.contain('npm run keys -- rotate development');
    expect(await secretWorks(store, (first as { secret: string }).secret)).to.equal(true);
  });

  it('instances starting together on one shared store: exactly one issues the key', async () => {
    const store = new MemoryStore();
    const outcomes = await Promise.all([1, 2, 3].map(() => issueDevelopmentKey(store, true, 60)));
    expect(outcomes.filter((o) => o.kind === 'issued')).to.have.length(1);
    expect(outcomes.filter((o) => o.kind === 'kept')).to.have.length(2);
  });

  it("this process's own store gets a fresh secret at each start; the earlier one stops working", async () => {
    const store = new MemoryStore();
    const first = (await issueDevelopmentKey(store, false, 60)) as { secret: string };
    const second = (await issueDevelopmentKey(store, false, 60)) as { secret: string };
    expect(second.secret).to.not.equal(first.secret);
    expect(await secretWorks(store, second.secret)).to.equal(true);
    expect(await secretWorks(store, first.secret)).to.equal(false);
  });

  it('issues none when the store holds real keys', async () => {
    const store = new MemoryStore();
    await createApiKey(store, { id: 'team', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null });
    expect(await issueDevelopmentKey(store, true, 60)).to.deep.equal({ kind: 'none' });
  });

  it('is retired (revoked) once a real active key exists, and only then', async () => {
    const store = new MemoryStore();
    const issued = (await issueDevelopmentKey(store, true, 60)) as { secret: string };
    expect(await retireDevelopmentKey(store)).to.equal(null);
    const team = await createApiKey(store, { id: 'team', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null });
    const retired = await retireDevelopmentKey(store);
    expect(retired).to.include({ id: DEVELOPMENT_KEY_ID, revoked: true });
    expect(await secretWorks(store, issued.secret)).to.equal(false);
    expect(await secretWorks(store, team.secret)).to.equal(true);
    expect(await retireDevelopmentKey(store)).to.equal(null);
  });

  it('leaves alone an operator key that merely has the id "development"', async () => {
    const store = new MemoryStore();
    await createApiKey(store, { id: 'development', name: 'dev team', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null });
    await createApiKey(store, { id: 'team', rateLimitPerMinute: 60, allowedModels: null, monthlyCreditCap: null });
    expect(await retireDevelopmentKey(store)).to.equal(null);
  });
});
