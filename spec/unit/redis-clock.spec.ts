/**
 * The Redis clock offset (lib/store/redis-clock.ts): measured from `TIME` between two readings of
 * this process's clock, converted to the server's time at the early end of its uncertainty, the
 * earliest of a cluster's primaries, refreshed on a timer; and the deadline the store guard gives
 * each admission (its call's start plus `store.timeoutMs`).
 */
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { MemoryStore } from '../../lib/store';
import { createApiKey } from '../../lib/store/key-admin';
import { createStoreGuard } from '../../lib/store/guard';
import { scriptDeadline } from '../../lib/store/redis-admission';
import { earliestClock, keepClock, measureClock, timeReplyMs, toServerMs } from '../../lib/store/redis-clock';
import type { AdmissionRequest } from '../../lib/store/types';
import { createCapturingLogger } from '../helpers/gateway';

/** A clock of this process that reads `readings` in turn. */
const readings = (...values: number[]) => () => values.shift()!;

describe('Redis clock offset', () => {
  it('reads a TIME reply as epoch ms (microseconds rounded down) and refuses anything else', () => {
    expect(timeReplyMs(['1764316800', '999999'])).to.equal(1_764_316_800_999);
    expect(timeReplyMs(['1764316800', '0'])).to.equal(1_764_316_800_000);
    expect(() => timeReplyMs(['1764316800'])).to.throw(RangeError);
    expect(() => timeReplyMs(['x', '1'])).to.throw(RangeError);
  });

  it('measures the offset at the round trip\'s midpoint, with half the round trip as its uncertainty', async () => {
    // Sent at 1000, answered at 1010 (our clock); the server read 5005.000 s + 250 µs: 5_005_000.25 ms -> 5_005_000.
    const reading = await measureClock(async () => ['5005', '250'], readings(1000, 1010));
    expect(reading).to.deep.equal({ offsetMs: 5_005_000 - 1005, uncertaintyMs: 5 });
  });

  it('a server behind this process: deadlines move earlier by the offset and the uncertainty', async () => {
    const reading = await measureClock(async () => ['1', '0'], readings(3000, 3004)); // server 1000 ms at our 3002
    expect(reading).to.deep.equal({ offsetMs: -2002, uncertaintyMs: 2 });
    // Our 10_000 is the server's 7998 (±2): the deadline is taken at its early end, 7996.
    expect(toServerMs(10_000, reading)).to.equal(7996);
    expect(toServerMs(10_000.9, { offsetMs: 0, uncertaintyMs: 0 }), 'rounded down').to.equal(10_000);
  });

  it('takes, of a cluster\'s primaries, the clock that can be earliest', () => {
    const a = { offsetMs: 10, uncertaintyMs: 1 };
    const b = { offsetMs: 5, uncertaintyMs: 0.5 };
    const c = { offsetMs: 6, uncertaintyMs: 3 };
    expect(earliestClock([a, b, c])).to.equal(c);
    expect(earliestClock([a])).to.equal(a);
    expect(() => earliestClock([])).to.throw(RangeError);
  });

  it('keeps the latest reading: refreshed on demand and by its timer, the last one kept when a measurement fails', async () => {
    const offsets = [1, 2, 3];
    let fail = false;
    const clock = await keepClock(async () => {
      if (fail) throw new Error('ECONNREFUSED');
      return { offsetMs: offsets.shift()!, uncertaintyMs: 0 };
    }, 20);
    try {
      expect(clock.reading().offsetMs).to.equal(1);
      await clock.refresh();
      expect(clock.reading().offsetMs).to.equal(2);
      for (let i = 0; i < 50 && clock.reading().offsetMs !== 3; i++) await new Promise((r) => setTimeout(r, 10));
      expect(clock.reading().offsetMs, 'the timer measured again').to.equal(3);
      fail = true;
      await clock.refresh();
      expect(clock.reading().offsetMs).to.equal(3);
    } finally {
      clock.stop();
    }
    await keepClock(async () => Promise.reject(new Error('no server'))).then(() => expect.fail('the first measurement must succeed'), (err: Error) => {
      expect(err.message).to.equal('no server');
    });
  });

  it('keeps the last precise reading when a refresh was measured while the process lagged', async () => {
    const next = [{ offsetMs: 7, uncertaintyMs: 1 }, { offsetMs: 900, uncertaintyMs: 1900 }, { offsetMs: 8, uncertaintyMs: 2 }, { offsetMs: 9, uncertaintyMs: 20 }];
    const clock = await keepClock(async () => next.shift()!, 60_000);
    try {
      await clock.refresh();
      expect(clock.reading(), 'a reading with a 1.9 s uncertainty').to.deep.equal({ offsetMs: 7, uncertaintyMs: 1 });
      await clock.refresh();
      expect(clock.reading().offsetMs).to.equal(8);
      await clock.refresh();
      expect(clock.reading().offsetMs, 'within the uncertainty any refresh may have').to.equal(9);
    } finally {
      clock.stop();
    }
  });

  it('the script stops admitting a little before the caller gives up: 50 ms, or a quarter of the time left', () => {
    expect(scriptDeadline(10_000, 8000)).to.equal(9950);
    expect(scriptDeadline(10_000, 9900)).to.equal(9975);
    expect(scriptDeadline(10_000, 10_500), 'past it already').to.equal(10_000);
  });

  it('the store guard gives each admission and credit reservation its deadline: the call\'s start plus store.timeoutMs', async () => {
    const seen: AdmissionRequest[] = [];
    const backing = new MemoryStore();
    const admit = backing.admit.bind(backing);
    backing.admit = (request) => {
      seen.push(request);
      return admit(request);
    };
    const store = createStoreGuard(backing, { logger: createCapturingLogger().logger, timeoutMs: 700 });
    const issued = await createApiKey(backing, { id: 'k', rateLimitPerMinute: 5 });
    const sha = hashSecret(issued.secret);
    const snapshot = (await backing.identifyKey(sha, Date.now()))!;
    const before = Date.now();
    expect(await store.admit({ snapshot, secretSha256: sha, now: before, rateLimitWindowMs: 60_000, reservation: null })).to.include({ outcome: 'admitted' });
    const after = Date.now();
    expect(seen).to.have.length(1);
    expect(seen[0].deadline).to.be.within(before + 700, after + 700);
    // A credit reservation outside the admission (batches, a measured input) carries one too.
    const deadlines: Array<number | undefined> = [];
    backing.reserveCredits = async (...args: unknown[]) => {
      deadlines.push(args[6] as number | undefined);
      return { ok: true, spent: 0, reservation: { id: 'r', keyId: 'k', month: '2026-11', credits: 1 } };
    };
    const start = Date.now();
    await store.reserveCredits('k', '2026-11', 1, null, 60_000);
    expect(deadlines[0]).to.be.within(start + 700, Date.now() + 700);
    await store.close();
  });
});
