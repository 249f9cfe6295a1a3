/** The store contract's audit log: appended in order at the store's clock, one chain under concurrent appends, read by position, the head kept. */
import { expect } from 'chai';
import { verifyAuditLog } from '../../../lib/audit/audit-query';
import { GENESIS_HASH } from '../../../lib/audit/audit-chain';
import type { AuditLogStore } from '../../../lib/store/types';
import { type ContractFixture, T0 } from './shared';

export function describeAuditLogStoreContract(current: () => ContractFixture<AuditLogStore>): void {
  let f: ContractFixture<AuditLogStore>;
  beforeEach(() => {
    f = current();
  });

  it('appends entries with consecutive ids, the store\'s time and the chain\'s hashes; reads them back by position; keeps the head', async () => {
    expect(await f.store.readAuditHead()).to.equal(null);
    expect(await f.store.readAudit(0, 10)).to.deep.equal([]);
    const first = await f.store.appendAudit({ actor: 'cli', action: 'key.create', object: { type: 'key', id: 'a' }, after: { name: 'a' } });
    expect(first).to.deep.include({ id: 1, at: new Date(T0).toISOString(), prevHash: GENESIS_HASH, team: null, before: null, ip: null });
    f.setNow(T0 + 1000);
    const second = await f.store.appendAudit({ actor: { subject: 's', email: null }, action: 'key.revoke', object: { type: 'key', id: 'a' }, team: 't', ip: '10.0.0.1' });
    expect(second).to.deep.include({ id: 2, prevHash: first.hash, team: 't', ip: '10.0.0.1', at: new Date(T0 + 1000).toISOString() });
    expect(await f.store.readAudit(0, 10)).to.deep.equal([first, second]);
    expect(await f.store.readAudit(1, 10)).to.deep.equal([second]);
    expect(await f.store.readAudit(0, 1)).to.deep.equal([first]);
    expect(await f.store.readAudit(2, 10)).to.deep.equal([]);
    expect(await f.store.readAuditHead()).to.deep.equal({ id: 2, hash: second.hash });
  });

  it('appends made at once form one chain', async () => {
    const appended = await Promise.all(Array.from({ length: 20 }, (_, i) => f.store.appendAudit({ actor: 'admin-token', action: 'key.update', object: { type: 'key', id: `k${i}` } })));
    expect(appended.map((e) => e.id).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(await verifyAuditLog(f.store)).to.deep.include({ intact: true, entries: 20, lastId: 20 });
  });
}
