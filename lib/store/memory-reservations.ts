/**
 * The memory store's credit reservations in flight, per key and UTC month bucket (`keyId|month`).
 *
 * A reservation past its expiry no longer counts against the cap but is kept (as `expired`) for
 * EXPIRED_RESERVATION_MEMORY_MS, so a late settlement of a request that outlived it is still recorded
 * once. A settled reservation is deleted, which is what makes a second settle a no-op; no list of
 * settled ids grows with traffic. Each bucket keeps the sum of its live reservations as they come and
 * go, so a new reservation costs O(1) however many of the key's requests are in flight; the
 * reservations are walked only when one expires or an expired one is forgotten.
 */

/** How long an expired reservation waits for a late settlement before it is forgotten: 24 h. */
export const EXPIRED_RESERVATION_MEMORY_MS = 24 * 60 * 60 * 1000;

interface HeldReservation {
  units: number;
  expiresAt: number;
  expired: boolean;
  forgetAt: number;
}

interface Bucket {
  reservations: Map<string, HeldReservation>;
  /** Units of the reservations that have not expired. */
  liveUnits: number;
  /** The earliest instant at which a reservation expires or an expired one is forgotten, epoch ms. */
  nextSweep: number;
}

export class MemoryReservations {
  private readonly buckets = new Map<string, Bucket>();

  /** Reservations in flight (live or expired but not yet forgotten), in every bucket. */
  get size(): number {
    let count = 0;
    for (const bucket of this.buckets.values()) count += bucket.reservations.size;
    return count;
  }

  /** Forget every reservation (a restored store has none in flight). */
  clear(): void {
    this.buckets.clear();
  }

  /** Credit units of `bucket`'s live reservations at `now` (epoch ms). */
  liveUnits(bucket: string, now: number): number {
    const held = this.buckets.get(bucket);
    if (!held) return 0;
    if (held.nextSweep <= now) sweep(held, now);
    if (held.reservations.size === 0) this.buckets.delete(bucket);
    return held.liveUnits;
  }

  /** Hold `units` for reservation `id` until `expiresAt` (epoch ms). */
  add(bucket: string, id: string, units: number, expiresAt: number): void {
    const held = this.buckets.get(bucket) ?? { reservations: new Map<string, HeldReservation>(), liveUnits: 0, nextSweep: Infinity };
    held.reservations.set(id, { units, expiresAt, expired: false, forgetAt: 0 });
    held.liveUnits += units;
    held.nextSweep = Math.min(held.nextSweep, expiresAt);
    this.buckets.set(bucket, held);
  }

  /** Extend a live reservation to at least `until` (epoch ms); false when it has expired or is gone. */
  renew(bucket: string, id: string, until: number, now: number): boolean {
    const held = this.buckets.get(bucket);
    if (!held) return false;
    if (held.nextSweep <= now) sweep(held, now);
    const reservation = held.reservations.get(id);
    if (!reservation || reservation.expired) return false;
    // A later expiry only makes the bucket's next sweep come early, which is harmless.
    reservation.expiresAt = Math.max(reservation.expiresAt, until);
    return true;
  }

  /** Remove a reservation to settle it; false when there is none (already settled, or never made here). */
  take(bucket: string, id: string): boolean {
    const held = this.buckets.get(bucket);
    const reservation = held?.reservations.get(id);
    if (!held || !reservation) return false;
    held.reservations.delete(id);
    if (!reservation.expired) held.liveUnits -= reservation.units;
    if (held.reservations.size === 0) this.buckets.delete(bucket);
    return true;
  }
}

/**
 * Mark the reservations past their expiry as expired, forget the expired ones past `forgetAt`, and
 * recompute the bucket's live sum and next sweep time.
 */
function sweep(held: Bucket, now: number): void {
  let liveUnits = 0;
  let nextSweep = Infinity;
  for (const [id, reservation] of held.reservations) {
    if (!reservation.expired && reservation.expiresAt <= now) {
      reservation.expired = true;
      reservation.forgetAt = now + EXPIRED_RESERVATION_MEMORY_MS;
    }
    if (!reservation.expired) {
      liveUnits += reservation.units;
      nextSweep = Math.min(nextSweep, reservation.expiresAt);
    } else if (reservation.forgetAt <= now) {
      held.reservations.delete(id);
    } else {
      nextSweep = Math.min(nextSweep, reservation.forgetAt);
    }
  }
  held.liveUnits = liveUnits;
  held.nextSweep = nextSweep;
}
