/** The store contract's request log: written with the settlement, paged in order, kept for the retention. */
import { expect } from 'chai';
import type { LedgerStore, RequestLogStore } from '../../../lib/store/types';
import { type ContractFixture, T0, HOUR, DAY, usage, units, logRecord, settleAt, readWholeLog } from './shared';

export function describeRequestLogStoreContract(current: () => ContractFixture<LedgerStore & RequestLogStore>): void {
  let f: ContractFixture<LedgerStore & RequestLogStore>;
  beforeEach(() => {
    f = current();
  });
  const settle = (keyId: string, month: string, credits: number, at: number) => settleAt(f.store, keyId, month, credits, at);
  const readAll = (fromMs: number, toMs: number) => readWholeLog(f.store, fromMs, toMs);

  describe('request log', () => {
    it('books a request settled after its month ended on the last day of the month it was reserved in', async () => {
      await settle('k1', '2025-06', 1, Date.UTC(2025, 6, 1, 0, 0, 5));
      const days = await f.store.getDailyUsage('k1', '2025-06');
      expect(days.map((row) => row.day)).to.deep.equal(['2025-06-30']);
      expect(await f.store.getDailyUsage('k1', '2025-07')).to.deep.equal([]);
      const [record] = await readAll(Date.UTC(2025, 5, 30), Date.UTC(2025, 6, 1));
      expect(record.time).to.equal(Date.UTC(2025, 6, 1) - 1);
    });

    it('writes the log record in the settlement step: credits as booked, once, paged in the order written', async () => {
      for (let i = 0; i < 5; i++) await settle(i % 2 ? 'k1' : 'k2', '2025-06', 0.1 * (i + 1), T0 + i * HOUR);
      await f.store.appendRequestLog(logRecord('req_count_tokens', { time: T0 + 30 * 60_000, model: null, route: 'POST /v1/messages/count_tokens' }));
      const r = await f.store.reserveCredits('k1', '2025-06', 1, null, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      const entry = { ...usage(0.5), at: T0 + 6 * HOUR, log: logRecord('req_twice') };
      await f.store.settleCredits(r.reservation, entry);
      await f.store.settleCredits(r.reservation, entry);
      const records = await readAll(T0, T0 + DAY);
      expect(records.map((record) => record.requestId)).to.deep.equal([
        'req_1749988800000_0.1', 'req_1749992400000_0.2', 'req_1749996000000_0.30000000000000004',
        'req_1749999600000_0.4', 'req_1750003200000_0.5', 'req_count_tokens', 'req_twice',
      ]);
      expect(records[0]).to.deep.include({ time: T0, credits: 0.1, keyId: 'k2', status: 200, streamed: false });
      const logged = records.reduce((sum, record) => sum + units(record.credits), 0);
      const days = [...await f.store.getDailyUsage('k1', '2025-06'), ...await f.store.getDailyUsage('k2', '2025-06')];
      expect(logged).to.equal(days.reduce((sum, row) => sum + units(row.credits), 0));
      expect(await readAll(T0 + HOUR, T0 + 2 * HOUR)).to.have.length(1);
      expect(await readAll(T0 + DAY, T0 + 2 * DAY)).to.deep.equal([]);
    });

    it('drops log records past the retention', async () => {
      f.store.setRequestLogRetention(2 * DAY);
      await settle('k1', '2025-06', 0.1, T0);
      await settle('k1', '2025-06', 0.2, T0 + DAY);
      f.setNow(T0 + 2 * DAY + HOUR);
      await settle('k1', '2025-06', 0.3, T0 + 2 * DAY + HOUR);
      const records = await readAll(T0 - DAY, T0 + 3 * DAY);
      expect(records.map((record) => record.credits)).to.deep.equal([0.2, 0.3]);
    });
  });
}
