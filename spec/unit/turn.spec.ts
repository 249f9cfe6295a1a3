/** The end of the event loop's turn (lib/http/turn.ts), which the in-memory store's answers and whole replies wait for. */
import { expect } from 'chai';
import { endOfTurn } from '../../lib/http/turn';

describe('endOfTurn', () => {
  it('is one promise for every caller of a turn, resolved after the microtasks and ticks of the turn', async () => {
    const events: string[] = [];
    const first = endOfTurn();
    const second = endOfTurn();
    expect(second).to.equal(first);
    void first.then(() => events.push('end of turn'));
    process.nextTick(() => events.push('tick'));
    void Promise.resolve().then(() => events.push('microtask'));
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(events).to.deep.equal(['tick', 'microtask']);
    await first;
    expect(events).to.deep.equal(['tick', 'microtask', 'end of turn']);
  });

  it('gives those that ask while it resolves the next turn\'s promise', async () => {
    const first = endOfTurn();
    let next: Promise<void> | undefined;
    let nextDone = false;
    await first.then(() => {
      next = endOfTurn();
      void next.then(() => (nextDone = true));
    });
    expect(next).not.to.equal(first);
    expect(nextDone).to.equal(false);
    await next;
    expect(nextDone).to.equal(true);
  });

  it('answers after what the turn had already queued: an earlier setImmediate runs first', async () => {
    const events: string[] = [];
    setImmediate(() => events.push('queued before'));
    await endOfTurn();
    events.push('end of turn');
    expect(events).to.deep.equal(['queued before', 'end of turn']);
  });
});
