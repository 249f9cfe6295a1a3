/** The bench's run order: the gateways of a scenario take turns at going first (bench/measure.ts). */
import { expect } from 'chai';
import { rowsForRepeat } from '../../bench/measure';

const row = (kind: string, name: string, scenario: string) => ({ target: { kind }, name, scenario });

describe('bench run order (rowsForRepeat)', () => {
  const rows = [
    row('forwarder', 'fwd', 'native-json'),
    row('floor', 'floor', 'native-json'),
    row('gateway', 'memory', 'native-json'),
    row('gateway', 'before', 'native-json'),
    row('gateway', 'redis', 'native-json'),
    row('gateway', 'memory', 'chat-json'),
    row('gateway', 'redis', 'chat-json'),
    row('forwarder', 'fwd', 'native-stream-5'),
    row('gateway', 'memory', 'native-stream-5'),
  ];
  const order = (rep: number) => rowsForRepeat(rows, rep).map((r) => `${r.name}/${r.scenario}`);

  it('keeps every other server in place and rotates the gateways of each scenario, one step a repeat', () => {
    expect(order(0)).to.deep.equal(rows.map((r) => `${r.name}/${r.scenario}`));
    expect(order(1)).to.deep.equal([
      'fwd/native-json', 'floor/native-json', 'before/native-json', 'redis/native-json', 'memory/native-json',
      'redis/chat-json', 'memory/chat-json', 'fwd/native-stream-5', 'memory/native-stream-5',
    ]);
  });

  it('puts each gateway first once in as many repeats as there are gateways', () => {
    const firsts = [0, 1, 2].map((rep) => order(rep)[2]);
    expect(firsts).to.have.members(['memory/native-json', 'before/native-json', 'redis/native-json']);
    for (const rep of [0, 1, 2, 3]) expect(order(rep)).to.have.members(rows.map((r) => `${r.name}/${r.scenario}`));
  });
});
