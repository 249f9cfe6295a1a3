/**
 * The memory store's stored responses (Responses route, `store: true`): kept as JSON text, so no
 * caller shares an object with the store, each with its expiry. Not in snapshots: a restart forgets them.
 */
import type { StoredResponse } from './types';

/**
 * Most stored responses one process keeps; past it the oldest goes first, so its memory does not grow
 * with traffic for the whole time to live.
 */
export const MAX_STORED_RESPONSES = 10_000;

/** Records kept as JSON text with an expiry, the oldest dropped past `max` (stored responses, pins). */
export class MemoryResponses<T extends { id: string } = StoredResponse> {
  private readonly responses = new Map<string, { json: string; expiresAt: number }>();
  /** When expired responses are next swept out (at most once a minute, on a save), epoch ms. */
  private nextSweep = 0;

  /** @param max most records kept (the oldest go first past it); pins are not bounded (a batch dropped would go unbilled). */
  constructor(private readonly clock: () => number, private readonly max = MAX_STORED_RESPONSES) {}

  save(record: T, ttlMs: number): void {
    const now = this.clock();
    if (now >= this.nextSweep) {
      this.nextSweep = now + 60_000;
      for (const [id, entry] of this.responses) if (entry.expiresAt <= now) this.responses.delete(id);
    }
    this.responses.delete(record.id);
    this.responses.set(record.id, { json: JSON.stringify(record), expiresAt: now + ttlMs });
    // A Map iterates in insertion order: the first entry is the oldest.
    while (this.responses.size > this.max) this.responses.delete(this.responses.keys().next().value as string);
  }

  get(id: string): T | null {
    const entry = this.responses.get(id);
    if (!entry) return null;
    if (entry.expiresAt <= this.clock()) {
      this.responses.delete(id);
      return null;
    }
    return JSON.parse(entry.json) as T;
  }

  /** Every live record with its expiry (epoch ms), oldest first. */
  entries(): Array<{ record: T; expiresAt: number }> {
    const now = this.clock();
    return [...this.responses.values()].filter((e) => e.expiresAt > now).map((e) => ({ record: JSON.parse(e.json) as T, expiresAt: e.expiresAt }));
  }

  /** Put back a record read from `entries()` with its expiry. */
  restore(record: T, expiresAt: number): void {
    this.responses.set(record.id, { json: JSON.stringify(record), expiresAt });
  }

  delete(id: string): boolean {
    const entry = this.responses.get(id);
    this.responses.delete(id);
    return entry !== undefined && entry.expiresAt > this.clock();
  }
}
