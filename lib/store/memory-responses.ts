/**
 * The memory store's stored responses (Responses route, `store: true`): kept as JSON text, so no
 * caller shares an object with the store, each with its expiry. Not in snapshots: a restart forgets them.
 *
 * Bounded per key and in all: a key holds at most `maxKeyBytes` (the caller's bound) and
 * MAX_STORED_RESPONSES_PER_KEY responses; past the process-wide MAX_STORED_RESPONSES, the oldest
 * response of the key holding the most goes, so one key's traffic never evicts another key's responses
 * while it holds more than they do.
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

export class MemoryResponses {
  private readonly responses = new Map<string, Entry>();
  /** Per key: its response ids, oldest first (a Set iterates in insertion order), and their JSON bytes. */
  private readonly byKey = new Map<string, { ids: Set<string>; bytes: number }>();
  /** When expired responses are next swept out (at most once a minute, on a save), epoch ms. */
  private nextSweep = 0;

  constructor(private readonly clock: () => number) {}

  /**
   * Keep `record` for `ttlMs`.
   * @param maxKeyBytes most bytes of JSON its key may hold (absent: no bound)
   * @returns false (nothing kept) when the record would put its key past `maxKeyBytes`
   */
  save(record: StoredResponse, ttlMs: number, maxKeyBytes = Infinity): boolean {
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
    this.responses.set(record.id, { json, keyId: record.keyId, expiresAt: now + ttlMs });
    own.ids.add(record.id);
    own.bytes += bytes;
    this.byKey.set(record.keyId, own);
    while (own.ids.size > MAX_STORED_RESPONSES_PER_KEY) this.remove(own.ids.values().next().value as string);
    while (this.responses.size > MAX_STORED_RESPONSES) this.evictFromLargestKey();
    return true;
  }

  get(id: string): StoredResponse | null {
    const entry = this.responses.get(id);
    if (!entry) return null;
    if (entry.expiresAt <= this.clock()) {
      this.remove(id);
      return null;
    }
    return JSON.parse(entry.json) as StoredResponse;
  }

  delete(id: string): boolean {
    const entry = this.responses.get(id);
    this.remove(id);
    return entry !== undefined && entry.expiresAt > this.clock();
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

  /** Drop the oldest response of the key that holds the most. */
  private evictFromLargestKey(): void {
    let largest: { ids: Set<string> } | undefined;
    for (const own of this.byKey.values()) if (!largest || own.ids.size > largest.ids.size) largest = own;
    if (largest) this.remove(largest.ids.values().next().value as string);
  }
}
