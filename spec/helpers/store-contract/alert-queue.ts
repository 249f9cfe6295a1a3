/** The store contract's budget alert queue: claimed once, leased to one caller at a time. */
import { expect } from 'chai';
import type { AlertQueueStore, BudgetAlert } from '../../../lib/store/types';
import { type ContractFixture, T0, DAY } from './shared';

export function describeAlertQueueStoreContract(current: () => ContractFixture<AlertQueueStore>): void {
  let f: ContractFixture<AlertQueueStore>;
  beforeEach(() => {
    f = current();
  });

  describe('budget alerts', () => {
    it('claims each alert once, keeps it pending through failed attempts, and leases it to one caller at a time', async () => {
      const alert: BudgetAlert = { id: 'k1:2025-06:50', keyId: 'k1', keyName: 'k1', threshold: 50, spent: 5, cap: 10, month: '2025-06', crossedAt: T0 };
      const claims = await Promise.all([f.store.claimBudgetAlert(alert), f.store.claimBudgetAlert(alert), f.store.claimBudgetAlert(alert)]);
      expect(claims.filter(Boolean)).to.have.length(1);
      const leased = await f.store.leaseBudgetAlert(T0, 30_000);
      expect(leased).to.deep.equal({ alert, attempts: 0 });
      expect(await f.store.leaseBudgetAlert(T0 + 1000, 30_000), 'leased to someone else').to.equal(null);
      await f.store.retryBudgetAlert({ alert, attempts: 1 }, T0 + 5000);
      expect(await f.store.leaseBudgetAlert(T0 + 4999, 30_000)).to.equal(null);
      expect(await f.store.leaseBudgetAlert(T0 + 5000, 30_000)).to.deep.equal({ alert, attempts: 1 });
      // A lease that ran out (its holder died) hands the alert on.
      expect(await f.store.leaseBudgetAlert(T0 + 35_000, 30_000)).to.deep.equal({ alert, attempts: 1 });
      await f.store.finishBudgetAlert(alert.id);
      expect(await f.store.leaseBudgetAlert(T0 + DAY, 30_000)).to.equal(null);
      expect(await f.store.claimBudgetAlert(alert), 'never claimed again').to.equal(false);
    });
  });
}
