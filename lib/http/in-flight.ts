/**
 * A count of operations under way, and a way to wait until none is: what graceful shutdown needs of
 * the responses, after-response steps and store writes still running.
 */
export class InFlight {
  private count = 0;
  private waiting: Array<() => void> = [];

  /** Operations under way. */
  get size(): number {
    return this.count;
  }

  /** Count one more operation under way; call `end` once when it is over. */
  begin(): void {
    this.count += 1;
  }

  /** One operation is over (bound: usable as a listener, e.g. `res.once('close', inFlight.end)`). */
  readonly end = (): void => {
    this.count -= 1;
    if (this.count > 0 || this.waiting.length === 0) return;
    const resolved = this.waiting;
    this.waiting = [];
    for (const resolve of resolved) resolve();
  };

  /**
   * Count `operation` until it settles (either way).
   * @returns `operation` itself, so callers still see its result or its rejection
   */
  track<T>(operation: Promise<T>): Promise<T> {
    this.begin();
    operation.then(this.end, this.end);
    return operation;
  }

  /** Resolves once nothing is under way, counting what starts meanwhile; at once when nothing is. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }
}
