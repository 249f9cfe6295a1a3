/** What the bench's targets ask of a single-threaded server (bench/measure.ts). */
import { expect } from 'chai';
import { cpuBudgetMicros, ratioForAddedP50 } from '../../bench/measure';

describe('bench target budgets', () => {
  it('cpuBudgetMicros: the CPU per request at which one saturated core serves the target ratio', () => {
    expect(cpuBudgetMicros(10_000, 0.6)).to.be.closeTo(166.67, 0.01);
    expect(cpuBudgetMicros(9_346, 0.5)).to.be.closeTo(213.99, 0.01);
    // One core (1e6 µs per second) spent at the budget serves exactly ratio x the forwarder's requests.
    for (const [rps, ratio] of [[16_800, 0.6], [3_000, 0.25], [9_346, 1]]) {
      expect(1e6 / cpuBudgetMicros(rps, ratio)).to.be.closeTo(ratio * rps, 1e-6);
    }
  });

  it('ratioForAddedP50: the throughput ratio whose closed-loop p50 is the forwarder\'s plus the allowance', () => {
    expect(ratioForAddedP50(3, 1)).to.equal(0.75);
    expect(ratioForAddedP50(2, 0)).to.equal(1);
    // Under the closed loop, p50 goes as forwarderP50 / ratio: at the returned ratio it is forwarderP50 + added.
    for (const [p50, added] of [[3.03, 1], [2, 1], [10, 0.5]]) {
      expect(p50 / ratioForAddedP50(p50, added)).to.be.closeTo(p50 + added, 1e-9);
    }
    // A lower allowance asks for more throughput.
    expect(ratioForAddedP50(3, 0.5)).to.be.greaterThan(ratioForAddedP50(3, 1));
  });
});
