/** How the bench prints a ratio target (bench/report.ts). */
import { expect } from 'chai';
import { formatRatio } from '../../bench/report';

describe('bench ratio figure (formatRatio)', () => {
  it('gives the median of the repeats and their spread', () => {
    expect(formatRatio([0.6, 0.531, 0.594])).to.equal('0.59 x (repeats 0.53 to 0.60)');
    // The bench's median is a nearest-rank one: of two repeats, the lower.
    expect(formatRatio([0.5, 0.4])).to.equal('0.40 x (repeats 0.40 to 0.50)');
  });

  it('gives one repeat alone, and a dash for none', () => {
    expect(formatRatio([0.4449])).to.equal('0.44 x');
    expect(formatRatio([])).to.equal('-');
  });
});
