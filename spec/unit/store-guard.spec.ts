/**
 * The store guard's lines during an outage name their request without a request scope: a failed call
 * becomes the request's 503 carrying its `store unreachable` line (the error handler writes it with
 * the request id), and lines about a reservation take the id from the reservation.
 */
import { expect } from 'chai';
import { GatewayError } from '../../lib/http/errors';
import { MemoryStore } from '../../lib/store';
import { createStoreGuard } from '../../lib/store/guard';
import type { Reservation, UsageEntry } from '../../lib/store/types';
import { createCapturingLogger } from '../helpers/gateway';

/** A memory store whose calls fail while `down` is set, as an unreachable Redis does. */
class FlakyStore extends MemoryStore {
  down = false;
  private fail(): Promise<never> {
    return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6390'));
  }
  override findKeyBySecretHash(sha256: string, now?: number) {
    return this.down ? this.fail() : super.findKeyBySecretHash(sha256, now);
  }
  override reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number) {
    return this.down ? this.fail() : super.reserveCredits(keyId, month, credits, cap, ttlMs);
  }
  override renewReservation(reservation: Reservation, ttlMs: number) {
    return this.down ? this.fail() : super.renewReservation(reservation, ttlMs);
  }
  override settleCredits(reservation: Reservation, usage: UsageEntry) {
    return this.down ? this.fail() : super.settleCredits(reservation, usage);
  }
}

const usage: UsageEntry = { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.5 };
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('store guard: outage lines', () => {
  it('fail closed: a failed call rejects with the 503 that carries its line, and logs nothing itself', async () => {
    const backing = new FlakyStore();
    const { logger, lines } = createCapturingLogger();
    const store = createStoreGuard(backing, { logger, timeoutMs: 200 });
    backing.down = true;
    const err = await store.findKeyBySecretHash('abc').then(() => null, (e: unknown) => e);
    expect(err).to.be.instanceOf(GatewayError);
    expect((err as GatewayError).status).to.equal(503);
    expect((err as GatewayError).log).to.deep.equal({ message: 'store unreachable', operation: 'findKey', error: 'connect ECONNREFUSED 127.0.0.1:6390' });
    await nextTurn();
    expect(lines).to.deep.equal([]);
    await store.close();
  });

  it('names the request of a reservation in the lines of its delayed settlement and failed renewal', async () => {
    const backing = new FlakyStore();
    const { logger, lines } = createCapturingLogger();
    const store = createStoreGuard(backing, { logger, timeoutMs: 200, retryEveryMs: 20 });
    const reserved = await store.reserveCredits('team', '2026-11', 1, null, 60_000);
    if (!reserved.ok) throw new Error('reservation refused');
    const reservation = { ...reserved.reservation, requestId: 'req_outage1' };
    backing.down = true;
    await store.renewReservation(reservation, 60_000).then(() => expect.fail('renewal should fail'), () => undefined);
    await store.settleCredits(reservation, usage);
    await nextTurn();
    expect(lines.find((l) => l.operation === 'renewReservation')).to.include({ message: 'store unreachable', level: 'error', request_id: 'req_outage1', key_id: 'team' });
    expect(lines.find((l) => /settlement delayed/.test(l.message))).to.include({ level: 'error', request_id: 'req_outage1', key_id: 'team' });
    // Recorded once the store answers again.
    backing.down = false;
    for (let i = 0; i < 100 && (await backing.getMonthSpend('team', '2026-11')) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await backing.getMonthSpend('team', '2026-11')).to.equal(0.5);
    await store.close();
  });

  it('fail open: writes the outage line and the unmetered warning itself (inside the request scope)', async () => {
    const backing = new FlakyStore();
    const { logger, lines } = createCapturingLogger();
    const store = createStoreGuard(backing, { logger, timeoutMs: 200, failOpen: true });
    backing.down = true;
    const reserved = await store.reserveCredits('team', '2026-11', 1, null, 60_000);
    expect(reserved.ok).to.equal(true);
    // A key never seen before the outage is refused even when failing open; that 503 carries its line.
    const err = await store.findKeyBySecretHash('never-seen').then(() => null, (e: unknown) => e);
    expect((err as GatewayError).log).to.include({ message: 'store unreachable', operation: 'findKey' });
    await nextTurn();
    expect(lines.map((l) => [l.level, l.message, l.operation])).to.deep.equal([
      ['error', 'store unreachable', 'reserveCredits'],
      ['warn', 'store unreachable: request served unmetered (store.failOpen)', 'reserveCredits'],
    ]);
    await store.close();
  });
});
