/** The store contract's keys: lookup by the secret's hash, admin changes, rotation. */
import { expect } from 'chai';
import { hashSecret } from '../../../lib/keys/secrets';
import { createApiKey, restoreApiKey, revokeApiKey, rotateApiKey, setKeyLimits } from '../../../lib/store/key-admin';
import type { KeyStore, LedgerStore } from '../../../lib/store/types';
import { type ContractFixture, T0, HOUR, newKey, usage, expectRejection } from './shared';

export function describeKeyStoreContract(current: () => ContractFixture<KeyStore & LedgerStore>): void {
  let f: ContractFixture<KeyStore & LedgerStore>;
  beforeEach(() => {
    f = current();
  });

  describe('keys', () => {
    it('finds a key by the hash of its secret, never by anything else, and keeps its settings', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa', { allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 12.5, rateLimitPerMinute: 7 }));
      const found = await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaaa'));
      expect(found).to.include({ id: 'k1', last4: 'aaaa', revoked: false, rateLimitPerMinute: 7, monthlyCreditCap: 12.5, keyGroup: 'default' });
      expect(found!.allowedModels).to.deep.equal(['model-haiku-4.5']);
      expect(await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaab'))).to.equal(null);
      expect(JSON.stringify(await f.store.listKeys())).not.to.include('sk-cs4-secret-one');
    });

    it('refuses a second key with the same id or the same secret', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa'));
      await expectRejection(f.store.createKey(newKey('k1', 'sk-cs4-other-secret-bbbb')), /already exists/);
      await expectRejection(f.store.createKey(newKey('k2', 'sk-cs4-secret-one-aaaa')), /already in use/);
    });

    it('revocation, restore and limit changes are seen by the very next lookup', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-one-aaaa'));
      await f.store.createKey(newKey('k2', 'sk-cs4-secret-two-bbbb'));
      await revokeApiKey(f.store, 'k1');
      expect((await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaaa')))!.revoked).to.equal(true);
      expect((await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-two-bbbb')))!.revoked).to.equal(false);
      await restoreApiKey(f.store, 'k1');
      await setKeyLimits(f.store, 'k1', { rateLimitPerMinute: 5, monthlyCreditCap: null, allowedModels: ['model-opus-5'] });
      expect(await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-one-aaaa'))).to.deep.include({
        revoked: false, rateLimitPerMinute: 5, monthlyCreditCap: null, allowedModels: ['model-opus-5'],
      });
      await expectRejection(revokeApiKey(f.store, 'nope'), /does not exist/);
    });

    it('createApiKey returns the secret once and stores only its hash', async () => {
      const issued = await createApiKey(f.store, { id: 'made', rateLimitPerMinute: 10, monthlyCreditCap: 3 });
      expect(issued.secret).to.match(/^sk-cs4-[A-Za-z0-9]{40}$/);
      expect((await f.store.findKeyBySecretHash(hashSecret(issued.secret)))!.id).to.equal('made');
      expect(JSON.stringify(await f.store.listKeys())).not.to.include(issued.secret);
      await expectRejection(createApiKey(f.store, { id: 'bad id!', rateLimitPerMinute: 1 }), /may hold only/);
    });
  });


  describe('rotation', () => {
    it('keeps the id, limits and usage; the old secret works through the grace period, then fails', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-old-aaaa', { rateLimitPerMinute: 9 }));
      const r = await f.store.reserveCredits('k1', '2025-06', 1, null, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await f.store.settleCredits(r.reservation, usage(1));
      const issued = await rotateApiKey(f.store, 'k1', 2 * HOUR, T0);
      expect(issued.key).to.include({ id: 'k1', rateLimitPerMinute: 9, last4: issued.secret.slice(-4) });
      const old = hashSecret('sk-cs4-secret-old-aaaa');
      expect((await f.store.findKeyBySecretHash(old, T0 + 2 * HOUR - 1))!.id).to.equal('k1');
      expect(await f.store.findKeyBySecretHash(old, T0 + 2 * HOUR)).to.equal(null);
      expect((await f.store.findKeyBySecretHash(hashSecret(issued.secret), T0 + 100 * HOUR))!.id).to.equal('k1');
      expect(await f.store.getMonthSpend('k1', '2025-06')).to.equal(1);
    });

    it('rotating again during a grace period leaves each earlier secret its own expiry', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-first-aaaa'));
      const second = await rotateApiKey(f.store, 'k1', 10 * HOUR, T0);
      const third = await rotateApiKey(f.store, 'k1', 1 * HOUR, T0 + HOUR);
      const first = hashSecret('sk-cs4-secret-first-aaaa');
      // first: expires at T0+10h (set by the first rotation, not moved by the second)
      expect(await f.store.findKeyBySecretHash(first, T0 + 9 * HOUR)).not.to.equal(null);
      expect(await f.store.findKeyBySecretHash(first, T0 + 10 * HOUR)).to.equal(null);
      // second: expires at T0+1h+1h
      expect(await f.store.findKeyBySecretHash(hashSecret(second.secret), T0 + 2 * HOUR - 1)).not.to.equal(null);
      expect(await f.store.findKeyBySecretHash(hashSecret(second.secret), T0 + 2 * HOUR)).to.equal(null);
      expect(await f.store.findKeyBySecretHash(hashSecret(third.secret), T0 + 1000 * HOUR)).not.to.equal(null);
    });

    it('a grace period of 0 ends the old secret at once', async () => {
      await f.store.createKey(newKey('k1', 'sk-cs4-secret-old-aaaa'));
      await rotateApiKey(f.store, 'k1', 0, T0);
      expect(await f.store.findKeyBySecretHash(hashSecret('sk-cs4-secret-old-aaaa'), T0)).to.equal(null);
    });
  });

}
