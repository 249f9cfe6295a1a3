/**
 * The store contract's keys declared in config.json: the file's secret replaces every other at once,
 * its limits and `revoked` apply at every sync, a run-time revocation survives every sync.
 */
import { expect } from 'chai';
import { parseConfig } from '../../../lib/config';
import { hashSecret } from '../../../lib/keys/secrets';
import { syncDeclaredKeys } from '../../../lib/store/declared-keys';
import { restoreApiKey, revokeApiKey, rotateApiKey } from '../../../lib/store/key-admin';
import type { GatewayStore } from '../../../lib/store/types';
import { testConfigObject } from '../gateway';
import { type ContractFixture, HOUR, T0, expectRejection, newKey } from './shared';

const OLD = 'sk-cs4-declared-old-secret-0001';
const NEW = 'sk-cs4-declared-new-secret-0002';

/** A validated config declaring `keys`. */
function configWith(keys: unknown[]) {
  return parseConfig(testConfigObject('http://127.0.0.1:9', { keys }), { TEST_UPSTREAM_API_KEY: 'x' });
}

/** What an admission of `secret` comes to now, after the auth step's lookup (the Redis store may answer it from its copy). */
async function admission(store: GatewayStore, secret: string, snapshot = undefined as Awaited<ReturnType<GatewayStore['identifyKey']>> | undefined) {
  const sha = hashSecret(secret);
  let seen = snapshot ?? (await store.identifyKey(sha, T0));
  if (!seen) return 'unknown';
  let result = await store.admit({ snapshot: seen, secretSha256: sha, now: T0, rateLimitWindowMs: 60_000, reservation: null });
  // As the auth step does: a record changed since the copy is admitted again as it is now.
  if (result.outcome === 'changed') {
    seen = result.snapshot;
    result = await store.admit({ snapshot: seen, secretSha256: sha, now: T0, rateLimitWindowMs: 60_000, reservation: null });
  }
  return result.outcome === 'refused' ? result.reason : result.outcome;
}

export function describeDeclaredKeyContract(current: () => ContractFixture<GatewayStore>): void {
  let f: ContractFixture<GatewayStore>;
  beforeEach(() => {
    f = current();
  });

  it('replaceSecret makes one secret the only one at once, rotated ones in their grace period included', async () => {
    await f.store.createKey(newKey('k1', OLD));
    const rotated = await rotateApiKey(f.store, 'k1', 10 * HOUR, T0);
    const before = await f.store.identifyKey(hashSecret(OLD), T0);
    expect(await f.store.replaceSecret('k1', { sha256: hashSecret(NEW), expiresAt: null }, '0002')).to.equal(true);
    expect(await f.store.replaceSecret('k1', { sha256: hashSecret(NEW), expiresAt: null }, '0002')).to.equal(false);
    expect(await f.store.findKeyBySecretHash(hashSecret(OLD), T0)).to.equal(null);
    expect(await f.store.findKeyBySecretHash(hashSecret(rotated.secret), T0)).to.equal(null);
    expect(await f.store.findKeyBySecretHash(hashSecret(NEW), T0)).to.include({ id: 'k1', last4: '0002' });
    // A snapshot taken before (the Redis store's copy) is refused by the admission.
    expect(await admission(f.store, OLD, before)).to.equal('unknown');
    expect(await admission(f.store, NEW)).to.equal('admitted');
    await f.store.createKey(newKey('k2', 'sk-cs4-another-key-secret-0003'));
    await expectRejection(f.store.replaceSecret('k1', { sha256: hashSecret('sk-cs4-another-key-secret-0003'), expiresAt: null }, '0003'), /already in use/);
    await expectRejection(f.store.replaceSecret('nope', { sha256: hashSecret(NEW), expiresAt: null }, '0002'), /does not exist/);
  });

  it('a sync gives a declared key the file\'s secret, limits and revocation, and names each change', async () => {
    expect(await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: OLD, monthlyCreditCap: 5 }]))).to.deep.equal([{ keyId: 'filed', field: 'created' }]);
    expect(await f.store.getKey('filed')).to.include({ declaredIn: 'config.json', monthlyCreditCap: 5, revoked: false, last4: '0001' });
    const seen = await f.store.identifyKey(hashSecret(OLD), T0);
    expect(await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: OLD, monthlyCreditCap: 5 }]))).to.deep.equal([]);

    const changes = await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: NEW, monthlyCreditCap: 9, rateLimitPerMinute: 3 }]));
    expect(changes).to.deep.include.members([
      { keyId: 'filed', field: 'secret' },
      { keyId: 'filed', field: 'monthlyCreditCap', from: 5, to: 9 },
      { keyId: 'filed', field: 'rateLimitPerMinute', from: 60, to: 3 },
    ]);
    expect(await admission(f.store, OLD, seen!)).to.equal('unknown');
    expect(await f.store.findKeyBySecretHash(hashSecret(NEW), T0)).to.include({ monthlyCreditCap: 9, rateLimitPerMinute: 3, last4: '0002' });

    await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: NEW, revoked: true }]));
    expect(await admission(f.store, NEW)).to.equal('revoked');
    await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: NEW }]));
    expect(await admission(f.store, NEW)).to.equal('admitted');
  });

  it('a run-time revocation survives every sync until a restore; a restore cannot undo the file\'s revocation', async () => {
    await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: OLD }]));
    await revokeApiKey(f.store, 'filed');
    await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: OLD, revoked: false }]));
    expect(await admission(f.store, OLD)).to.equal('revoked');
    await restoreApiKey(f.store, 'filed');
    expect(await admission(f.store, OLD)).to.equal('admitted');
    await syncDeclaredKeys(f.store, configWith([{ id: 'filed', key: OLD, revoked: true }]));
    await expectRejection(restoreApiKey(f.store, 'filed'), /revoked in config\.json/);
    expect(await admission(f.store, OLD)).to.equal('revoked');
  });

  it('two instances starting at once on one store both start, and make the key once', async () => {
    const config = configWith([{ id: 'filed', key: OLD, monthlyCreditCap: 5 }]);
    const [a, b] = await Promise.all([syncDeclaredKeys(f.store, config), syncDeclaredKeys(f.store, config)]);
    expect([...a, ...b].filter((change) => change.field === 'created')).to.have.length(1);
    expect(await admission(f.store, OLD)).to.equal('admitted');
    expect((await f.store.listKeys()).map((key) => key.id)).to.deep.equal(['filed']);
  });

  it('a key given by its hash shows no secret end; a key left out of the file is revoked, no longer declared, restorable', async () => {
    // As the seeding before this kept it: the hash's end shown as if it were the secret's.
    await f.store.createKey(newKey('hashed', OLD, { last4: hashSecret(OLD).slice(-4) }));
    const fixed = await syncDeclaredKeys(f.store, configWith([{ id: 'hashed', keySha256: hashSecret(OLD) }]));
    expect(fixed).to.deep.include({ keyId: 'hashed', field: 'last4', from: hashSecret(OLD).slice(-4), to: '' });
    expect(fixed.map((change) => change.field)).not.to.include('secret');
    expect((await f.store.getKey('hashed'))!.last4).to.equal('');
    const changes = await syncDeclaredKeys(f.store, configWith([]));
    expect(changes).to.deep.include({ keyId: 'hashed', field: 'undeclared' });
    expect((await f.store.getKey('hashed'))!.declaredIn).to.equal(null);
    expect(await admission(f.store, OLD)).to.not.equal('admitted');
    // A run-time revocation: a restore brings it back, and a later sync without it leaves it so.
    await restoreApiKey(f.store, 'hashed');
    expect(await syncDeclaredKeys(f.store, configWith([]))).to.deep.equal([]);
    expect(await admission(f.store, OLD)).to.equal('admitted');
  });

  it('a key taken out of the file and declared again works again (another instance may sync an older file)', async () => {
    await syncDeclaredKeys(f.store, configWith([{ id: 'back', key: OLD }]));
    await syncDeclaredKeys(f.store, configWith([]));
    expect(await admission(f.store, OLD)).to.not.equal('admitted');
    await syncDeclaredKeys(f.store, configWith([{ id: 'back', key: OLD }]));
    expect(await admission(f.store, OLD)).to.equal('admitted');
  });

  it('a sync never overwrites a revocation made between its read of the key and its write (the store derives revoked)', async () => {
    // The file revoked it; the new file lifts that, while the CLI revokes it at run time meanwhile.
    await syncDeclaredKeys(f.store, configWith([{ id: 'raced', key: OLD, revoked: true }]));
    // A record from before run-time revocations were kept apart (no revokedAtRunTime), raced the same way.
    await f.store.createKey(newKey('legacy', NEW));
    const racing = new Proxy(f.store, {
      get(target, name, receiver) {
        if (name !== 'getKey') return Reflect.get(target, name, receiver);
        return async (id: string) => {
          const read = await target.getKey(id);
          await revokeApiKey(target, id);
          return read;
        };
      },
    });
    const changes = await syncDeclaredKeys(racing, configWith([{ id: 'raced', key: OLD, revoked: false }, { id: 'legacy', key: NEW }]));
    for (const id of ['raced', 'legacy']) expect(await f.store.getKey(id), id).to.include({ revoked: true, revokedAtRunTime: true });
    expect(await admission(f.store, OLD)).to.equal('revoked');
    expect(await admission(f.store, NEW)).to.equal('revoked');
    expect(changes.filter((change) => change.field === 'revoked')).to.deep.equal([]);
    // A restore (logged by its caller) is what lifts it; the file no longer revokes it.
    await restoreApiKey(f.store, 'raced');
    expect(await admission(f.store, OLD)).to.equal('admitted');
  });

  it('a key the file declares for the first time keeps the limits set at run time that the file leaves out', async () => {
    // Made before keys followed the file, then changed at run time.
    await f.store.createKey(newKey('older', OLD, { name: 'Team A', rateLimitPerMinute: 7, allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 3 }));
    const changes = await syncDeclaredKeys(f.store, configWith([{ id: 'older', key: OLD, monthlyCreditCap: 9 }]));
    expect(await f.store.getKey('older')).to.deep.include({ declaredIn: 'config.json', name: 'Team A', rateLimitPerMinute: 7, allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 9 });
    expect(changes.map((change) => change.field)).to.not.include.members(['name', 'rateLimitPerMinute', 'allowedModels']);
    expect(await admission(f.store, OLD)).to.equal('admitted');
    // From then on the file sets them all (the admin API refuses to): a field it leaves out takes its default.
    await syncDeclaredKeys(f.store, configWith([{ id: 'older', key: OLD, monthlyCreditCap: 9 }]));
    expect(await f.store.getKey('older')).to.include({ name: 'older', rateLimitPerMinute: 60, allowedModels: null });
  });

  it('a key the file declares for the first time keeps a rotated secret\'s grace when the file names its current secret', async () => {
    // Made before keys followed the file and rotated at run time; the file was then given the new secret.
    await f.store.createKey(newKey('turned', OLD));
    const rotated = await f.store.rotateKey('turned', { sha256: hashSecret(NEW), expiresAt: null }, '0002', 10 * HOUR, T0);
    expect(rotated.last4).to.equal('0002');
    const changes = await syncDeclaredKeys(f.store, configWith([{ id: 'turned', key: NEW }]));
    expect(changes.map((change) => change.field)).to.not.include('secret');
    expect(await f.store.findKeyBySecretHash(hashSecret(OLD), T0 + HOUR), 'the old secret in its grace').to.include({ id: 'turned' });
    expect(await f.store.findKeyBySecretHash(hashSecret(OLD), T0 + 11 * HOUR), 'and not after it').to.equal(null);
    expect(await admission(f.store, NEW)).to.equal('admitted');
    // A secret the file no longer names still fails at once.
    const ANOTHER = 'sk-cs4-declared-third-secret-0003';
    await syncDeclaredKeys(f.store, configWith([{ id: 'turned', key: ANOTHER }]));
    expect(await f.store.findKeyBySecretHash(hashSecret(OLD), T0 + HOUR)).to.equal(null);
    expect(await f.store.findKeyBySecretHash(hashSecret(NEW), T0 + HOUR)).to.equal(null);
  });
}
