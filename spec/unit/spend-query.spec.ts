/** The admin spend routes' pure parts: day ranges, CSV fields, day sums. */
import { expect } from 'chai';
import { formatCsvField } from '../../lib/admin/spend-routes';
import { daysOfMonth, parseDayRange, sumByDay } from '../../lib/admin/usage-query';
import { bookingTime, isUtcDay } from '../../lib/store/usage-days';

describe('spend queries', () => {
  it('writes CSV fields per RFC 4180 and defuses spreadsheet formulas', () => {
    const cases: Array<[unknown, string]> = [
      ['plain', 'plain'], [12.5, '12.5'], [-3, '-3'], [null, ''], [true, 'true'],
      ['a,b', '"a,b"'], ['say "hi"', '"say ""hi"""'], ['two\nlines', '"two\nlines"'],
      ['=HYPERLINK("x")', `"'=HYPERLINK(""x"")"`], ['+1', "'+1"], ['-x', "'-x"], ['@sum', "'@sum"],
      ['\t=1+1', "'\t=1+1"], ['\r=1+1', `"'\r=1+1"`],
    ];
    for (const [value, expected] of cases) expect(formatCsvField(value), String(value)).to.equal(expected);
  });

  it('reads day ranges: defaults, leap days, and the 400-day bound', () => {
    const now = Date.UTC(2025, 6, 31, 12);
    expect(parseDayRange({}, now)).to.deep.equal({ from: '2025-07-02', to: '2025-07-31' });
    expect(parseDayRange({ from: '2024-02-29', to: '2025-04-02' }, now)).to.deep.equal({ from: '2024-02-29', to: '2025-04-02' });
    expect(() => parseDayRange({ from: '2024-01-01', to: '2025-02-04' }, now)).to.throw(/^to: .*401 days; at most 400/);
    expect(() => parseDayRange({ from: '2025-02-29' }, now)).to.throw(/^from: /);
    expect(isUtcDay('2024-02-29')).to.equal(true);
    expect(isUtcDay('2025-02-29')).to.equal(false);
  });

  it('books usage settled after its month on the month\'s last millisecond, before it on its first', () => {
    expect(bookingTime(Date.UTC(2025, 5, 15), '2025-06')).to.equal(Date.UTC(2025, 5, 15));
    expect(bookingTime(Date.UTC(2025, 6, 1, 0, 0, 1), '2025-06')).to.equal(Date.UTC(2025, 6, 1) - 1);
    expect(bookingTime(Date.UTC(2025, 4, 31, 23, 59), '2025-06')).to.equal(Date.UTC(2025, 5, 1));
  });

  it('sums rows of several keys by day, every day listed, credits exact', () => {
    const row = (day: string, model: string, credits: number) => ({ day, model, credits, requests: 1, inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 });
    const days = sumByDay([row('2025-02-01', 'a', 0.1), row('2025-02-01', 'a', 0.2), row('2025-02-01', 'b', 0.7), row('2025-03-01', 'a', 9)], daysOfMonth('2025-02'));
    expect(days).to.have.length(28);
    expect(days[0]).to.deep.include({ day: '2025-02-01', credits: 1, requests: 3 });
    expect(days[0].models.map((m) => [m.model, m.credits])).to.deep.equal([['b', 0.7], ['a', 0.3]]);
    expect(days[27]).to.deep.include({ day: '2025-02-28', credits: 0, requests: 0 });
  });
});
