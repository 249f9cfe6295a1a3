/**
 * The memory store's records kept with an expiry as JSON text, so no caller shares an object with the
 * store: stored responses (Responses route, `store: true`; not in snapshots: a restart forgets them)
 * and the pins of Message Batches and Files (kept in snapshots, see memory-persistence.ts).
 *
 * Stored responses are bounded per key and in all: a key holds at most `maxKeyBytes` (the caller's
 * bound) and MAX_STORED_RESPONSES_PER_KEY responses; past the process-wide MAX_STORED_RESPONSES, the
 * oldest response of the key holding the most goes, so one key's traffic never evicts another key's
 * responses while it holds more than they do. Pins are not bounded (a batch dropped would go unbilled).
 */
import type { StoredResponse } from './types';

/** Most stored responses one process keeps. */
export const MAX_STORED_RESPONSES = 10_000;

/** Most stored responses one key keeps (its oldest goes first past it). */
export const MAX_STORED_RESPONSES_PER_KEY = 1_000;

interface Entry {
  json: string;
  keyId: string;
  expiresAt: number;
}

export class MemoryResponses<T extends { id: string; keyId: string } = StoredResponse> {
  private readonly responses = new Map<string, Entry>();
  /** Per key: its record ids, oldest first (a Set iterates in insertion order), and their JSON bytes. */
  private readonly byKey = new Map<string, { ids: Set<string>; bytes: number }>();
  /** When expired records are next swept out (at most once a minute, on a save), epoch ms. */
  private nextSweep = 0;

  /**
   * @param max most records kept in all (past it the key holding the most loses its oldest)
   * @param maxPerKey most records one key keeps (past it its oldest goes)
   */
  constructor(private readonly clock: () => number, private readonly max = MAX_STORED_RESPONSES, private readonly maxPerKey = MAX_STORED_RESPONSES_PER_KEY) {}

  /**
   * Keep `record` for `ttlMs`.
   * @param maxKeyBytes most bytes of JSON its key may hold (absent: no bound)
   * @returns false (nothing kept) when the record would put its key past `maxKeyBytes`
   */
  save(record: T, ttlMs: number, maxKeyBytes = Infinity): boolean {
    const now = this.clock();
    if (now >= this.nextSweep) {
      this.nextSweep = now + 60_000;
      for (const [id, entry] of this.responses) if (entry.expiresAt <= now) this.remove(id);
    }
    this.remove(record.id);
    const json = JSON.stringify(record);
    const bytes = Buffer.byteLength(json);
    const own = this.byKey.get(record.keyId) ?? { ids: new Set<string>(), bytes: 0 };
    if (own.bytes + bytes > maxKeyBytes) return false;
    this.put(record.id, { json, keyId: record.keyId, expiresAt: now + ttlMs });
    while (own.ids.size > this.maxPerKey) this.remove(own.ids.values().next().value as string);
    while (this.responses.size > this.max) this.evictFromLargestKey();
    return true;
  }

  get(id: string): T | null {
    const entry = this.responses.get(id);
    if (!entry) return null;
    if (entry.expiresAt <= this.clock()) {
      this.remove(id);
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
    this.remove(record.id);
    this.put(record.id, { json: JSON.stringify(record), keyId: record.keyId, expiresAt });
  }

  delete(id: string): boolean {
    const entry = this.responses.get(id);
    this.remove(id);
    return entry !== undefined && entry.expiresAt > this.clock();
  }

  private put(id: string, entry: Entry): void {
    this.responses.set(id, entry);
    const own = this.byKey.get(entry.keyId) ?? { ids: new Set<string>(), bytes: 0 };
    own.ids.add(id);
    own.bytes += Buffer.byteLength(entry.json);
    this.byKey.set(entry.keyId, own);
  }

  private remove(id: string): void {
    const entry = this.responses.get(id);
    if (!entry) return;
    this.responses.delete(id);
    const own = this.byKey.get(entry.keyId)!;
    own.ids.delete(id);
    own.bytes -= Buffer.byteLength(entry.json);
    if (own.ids.size === 0) this.byKey.delete(entry.keyId);
  }

  /** Drop the oldest record of the key that holds the most. */
  private evictFromLargestKey(): void {
    let largest: { ids: Set<string> } | undefined;
    for (const own of this.byKey.values()) if (!largest || own.ids.size > largest.ids.size) largest = own;
    if (largest) this.remove(largest.ids.values().next().value as string);
  }
}
