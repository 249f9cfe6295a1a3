import { expect } from 'chai';
import { isUtcMonth, nextUtcMonthStart, utcMonth } from '../../lib/store/month';
import { toCreditUnits, toCreditUnitsCeil } from '../../lib/store/credits';

describe('UTC months of the credit cap', () => {
  const cases: Array<[string, string, string]> = [
    // instant (UTC), bucket, next month start
    ['2025-01-31T23:59:59.999Z', '2025-01', '2025-02-01T00:00:00.000Z'],
    ['2025-02-01T00:00:00.000Z', '2025-02', '2025-03-01T00:00:00.000Z'],
    ['2024-02-29T12:00:00.000Z', '2024-02', '2024-03-01T00:00:00.000Z'],
    ['2025-12-31T23:59:59.999Z', '2025-12', '2026-01-01T00:00:00.000Z'],
    ['2026-01-01T00:00:00.000Z', '2026-01', '2026-02-01T00:00:00.000Z'],
  ];
  for (const [instant, bucket, next] of cases) {
    it(`${instant} is in ${bucket}, which ends at ${next}`, () => {
      const ms = Date.parse(instant);
      expect(utcMonth(ms)).to.equal(bucket);
      expect(new Date(nextUtcMonthStart(ms)).toISOString()).to.equal(next);
    });
  }

  it('does not depend on the local time zone (a local date near midnight is still in its UTC month)', () => {
    // 2025-03-31T23:30 in UTC-5 is 2025-04-01T04:30Z
    expect(utcMonth(Date.parse('2025-03-31T23:30:00-05:00'))).to.equal('2025-04');
  });

  it('recognises bucket names', () => {
    expect(['2025-01', '1999-12'].every(isUtcMonth)).to.equal(true);
    expect(['2025-13', '2025-1', '25-01', '2025-00'].some(isUtcMonth)).to.equal(false);
  });

  it('converts credits to exact integer units (reservations round up, charges to the nearest)', () => {
    expect(toCreditUnitsCeil(0.1 + 0.2)).to.equal(300_000_000);
    expect(toCreditUnitsCeil(1.1e-9)).to.equal(2);
    // one cache-read token of haiku (0.1 per million) is a whole number of units
    expect(toCreditUnits(0.1 / 1_000_000)).to.equal(100);
    expect(toCreditUnits(12.345678912)).to.equal(12_345_678_912);
  });
});
