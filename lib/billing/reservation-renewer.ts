/** The renewal of the credit holds of requests in flight (the credit reservation step keeps each one until its reply closes). */
import type { Response } from 'express';
import type { RequestContext } from '../pipeline/context';
import type { LedgerStore, Reservation } from '../store/types';

/**
 * A reservation's expiry (the upstream timeout) only bounds a request whose process died. A request still
 * in flight, such as a stream longer than that, has its reservation renewed at least every half expiry, so
 * its credits keep counting against the cap until it settles; renewals stop when the response closes.
 * One timer serves every request in flight (ticking at half the shortest expiry among them), rather
 * than an interval timer per request.
 */
export interface ReservationRenewer {
  /** Keep `reservation` alive (for `reservationTtlMs` past each renewal) until `res` closes. */
  keep(res: Response, reservation: Reservation, reservationTtlMs: number): void;
}

export function createReservationRenewer(store: LedgerStore): ReservationRenewer {
  const open = new Set<{ reservation: Reservation; reservationTtlMs: number }>();
  let timer: NodeJS.Timeout | undefined;
  let periodMs = Infinity;
  const renewAll = () => {
    for (const { reservation, reservationTtlMs } of open) {
      // A renewal that fails (store unreachable) leaves the reservation to its expiry; the next one may succeed.
      Promise.resolve().then(() => store.renewReservation(reservation, reservationTtlMs)).catch(() => undefined);
    }
  };
  return {
    keep(res, reservation, reservationTtlMs) {
      const entry = { reservation, reservationTtlMs };
      open.add(entry);
      const wantedMs = Math.max(1000, Math.floor(reservationTtlMs / 2));
      if (timer === undefined || wantedMs < periodMs) {
        clearInterval(timer);
        periodMs = wantedMs;
        timer = setInterval(renewAll, periodMs);
        timer.unref();
      }
      // Until the upstream step is done too: a whole reply whose client left is still being read.
      res.once('close', () => void Promise.resolve((res.locals?.gateway as RequestContext | undefined)?.upstreamDone).then(() => {
        open.delete(entry);
        if (open.size > 0) return;
        clearInterval(timer);
        timer = undefined;
        periodMs = Infinity;
      }));
    },
  };
}
