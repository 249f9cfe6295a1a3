/**
 * The memory store's rate-limit windows: per key, the requests counted in a window of `windowMs` that
 * starts at the key's first request (as the Redis store's counter: INCR, with an expiry set on the first).
 */

/** Windows kept before the ended ones are swept. */
const SWEEP_SIZE = 10_000;

export class MemoryRateWindows {
  /** key id -> requests counted and when the window ends (epoch ms) */
  private readonly windows = new Map<string, { hits: number; resetAt: number }>();

  /** Count one request of `keyId` at `now` (epoch ms); returns the window's count so far and its end (epoch ms). */
  hit(keyId: string, now: number, windowMs: number): { hits: number; resetAt: number } {
    let window = this.windows.get(keyId);
    if (!window || window.resetAt <= now) {
      if (this.windows.size >= SWEEP_SIZE) this.sweep(now);
      window = { hits: 0, resetAt: now + windowMs };
      this.windows.set(keyId, window);
    }
    window.hits += 1;
    return window;
  }

  /** Forget the windows that have ended. */
  private sweep(now: number): void {
    for (const [id, window] of this.windows) {
      if (window.resetAt <= now) this.windows.delete(id);
    }
  }
}
