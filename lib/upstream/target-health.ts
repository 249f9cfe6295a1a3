/**
 * The health of one upstream target, as this instance has seen it (not shared between instances):
 * a cooldown the upstream asked for (`retry-after` on a 429/503/529), and a circuit breaker that opens
 * after consecutive failures (connection errors, head timeouts, failover statuses without
 * `retry-after`), stays open for its cooldown, then lets one trial request through: a success closes
 * it, a failure opens it again for another cooldown.
 */

/** What /health and the admin API show of a target. */
export type TargetState = 'healthy' | 'cooling_down' | 'breaker_open' | 'half_open';

export interface TargetHealthOptions {
  /** Consecutive failures that open the breaker. Default 3. */
  breakerThreshold?: number;
  /** How long an open breaker keeps the target out before its trial request, in ms. Default 30000. */
  breakerCooldownMs?: number;
}

/** A target's health as reported: its state, until when (epoch ms; null when healthy or half open), and its failure streak. */
export interface TargetHealthView {
  state: TargetState;
  until: number | null;
  consecutiveFailures: number;
}

export const TARGET_HEALTH_DEFAULTS = { breakerThreshold: 3, breakerCooldownMs: 30_000 } as const;

/**
 * The state machine. Every method takes the time (epoch ms) from the caller, which owns the clock;
 * nothing here allocates, so a request pays a few field reads for it.
 */
export class TargetHealth {
  private coolUntil = 0;
  private breakerOpen = false;
  private openUntil = 0;
  private trialInFlight = false;
  private failures = 0;
  private readonly threshold: number;
  private readonly cooldownMs: number;

  constructor(options: TargetHealthOptions = {}) {
    this.threshold = options.breakerThreshold ?? TARGET_HEALTH_DEFAULTS.breakerThreshold;
    this.cooldownMs = options.breakerCooldownMs ?? TARGET_HEALTH_DEFAULTS.breakerCooldownMs;
  }

  /** True when the target may take a request at `now`: not cooling down, breaker closed, or its one trial not yet taken. */
  available(now: number): boolean {
    if (now < this.coolUntil) return false;
    if (!this.breakerOpen) return true;
    return now >= this.openUntil && !this.trialInFlight;
  }

  /** Epoch ms at which the target takes requests again (`now` or earlier when it does). */
  backAt(): number {
    return Math.max(this.coolUntil, this.breakerOpen ? this.openUntil : 0);
  }

  /**
   * The target was chosen for an attempt: with the breaker half open, this attempt is its trial.
   * @param now the clock, read only while the breaker is open
   */
  take(now: () => number): void {
    if (this.breakerOpen && now() >= this.openUntil) this.trialInFlight = true;
  }

  /** The attempt brought an answer that is not a failure (any status but a failover one): the breaker closes. */
  succeeded(): void {
    this.failures = 0;
    this.breakerOpen = false;
    this.trialInFlight = false;
  }

  /**
   * The attempt failed at `now`.
   * @param retryAfterMs the upstream's `retry-after` in ms, when it sent one: the target cools down for
   *   that long (the breaker's count is left alone: the upstream said when to come back)
   */
  failed(now: number, retryAfterMs?: number): void {
    this.trialInFlight = false;
    if (retryAfterMs !== undefined) {
      this.coolUntil = Math.max(this.coolUntil, now + retryAfterMs);
      return;
    }
    this.failures++;
    if (this.breakerOpen || this.failures >= this.threshold) {
      this.breakerOpen = true;
      this.openUntil = now + this.cooldownMs;
    }
  }

  /** The attempt ended without a verdict (the client went away): a trial it held is given back. */
  released(): void {
    this.trialInFlight = false;
  }

  /** The state at `now` (epoch ms): a cooldown shows while it outlasts an open breaker. */
  view(now: number): TargetHealthView {
    const consecutiveFailures = this.failures;
    if (now < this.coolUntil && (!this.breakerOpen || this.coolUntil >= this.openUntil)) return { state: 'cooling_down', until: this.coolUntil, consecutiveFailures };
    if (this.breakerOpen && now < this.openUntil) return { state: 'breaker_open', until: this.openUntil, consecutiveFailures };
    if (this.breakerOpen) return { state: 'half_open', until: null, consecutiveFailures };
    return { state: 'healthy', until: null, consecutiveFailures };
  }
}
