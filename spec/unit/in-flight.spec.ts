import { expect } from 'chai';
import { InFlight } from '../../lib/http/in-flight';

describe('InFlight: operations under way', () => {
  it('is idle at once when nothing is under way', async () => {
    const inFlight = new InFlight();
    expect(inFlight.size).to.equal(0);
    await inFlight.idle();
  });

  it('waits for every operation, including those that start while it waits', async () => {
    const inFlight = new InFlight();
    const events: string[] = [];
    inFlight.begin();
    const idle = inFlight.idle().then(() => events.push('idle'));
    let finishSecond!: () => void;
    const second = inFlight.track(new Promise<string>((resolve) => (finishSecond = () => resolve('second'))));
    inFlight.end(); // the first is over; the second is still under way
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).to.deep.equal([]);
    expect(inFlight.size).to.equal(1);
    finishSecond();
    expect(await second).to.equal('second');
    await idle;
    expect(events).to.deep.equal(['idle']);
    expect(inFlight.size).to.equal(0);
  });

  it('counts a rejected operation as over and hands its rejection back to the caller', async () => {
    const inFlight = new InFlight();
    const failing = inFlight.track(Promise.reject(new Error('store down')));
    let caught: unknown;
    await failing.catch((err: unknown) => (caught = err));
    expect((caught as Error).message).to.equal('store down');
    await inFlight.idle();
    expect(inFlight.size).to.equal(0);
  });

  it('has an end usable as a listener, detached from the object', () => {
    const inFlight = new InFlight();
    inFlight.begin();
    const { end } = inFlight;
    end();
    expect(inFlight.size).to.equal(0);
  });
});
