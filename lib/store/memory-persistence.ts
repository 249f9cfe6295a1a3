/**
 * Keeps the in-memory store across a restart of a single instance, a crash (`kill -9`) included: the
 * state (keys, secret hashes, spend, usage ledger) is written to a JSON file and read back at start.
 * It is written when the server stops, at once after every key change (created, revoked, changed,
 * rotated: on disk before the admin call answers), and every MEMORY_FLUSH_INTERVAL_MS while spend
 * changes (longer when one write takes more than a tenth of that, see MEMORY_FLUSH_MAX_SHARE), so a
 * crash loses at most that much settled spend. Several instances never see each other's
 * state: that needs the Redis store.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MemoryStore, type MemorySnapshot } from './memory-store';

/**
 * Fill `store` from the state file, when there is one.
 * @returns whether a file was read
 * @throws Error when the file exists but is not a snapshot (refusing to start beats silently
 *   forgetting a month of usage)
 */
export function loadMemoryState(store: MemoryStore, file: string): boolean {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  let snapshot: MemorySnapshot;
  try {
    snapshot = JSON.parse(text) as MemorySnapshot;
    store.restore(snapshot);
  } catch (err) {
    throw new Error(`state file ${file} cannot be read back (${(err as Error).message}); move it away to start empty`);
  }
  return true;
}

/** How often settled spend is written to the state file while it changes, in ms (what a crash can lose at most). */
export const MEMORY_FLUSH_INTERVAL_MS = 1000;

/**
 * The periodic write takes at most this share of the time: after a write that took `d` ms, the next
 * waits at least `d / MEMORY_FLUSH_MAX_SHARE` (a state with a large request log takes longer to write).
 */
export const MEMORY_FLUSH_MAX_SHARE = 0.1;

/**
 * Keep the state file current while the gateway runs (see the module comment).
 * @param onError called when a periodic write fails (the next one tries again); a write after a key
 *   change that fails throws from the store call that changed the key, so the admin call fails loudly
 * @returns stop(): no more writes (the caller writes the last state itself)
 */
export function keepMemoryState(store: MemoryStore, file: string, onError: (err: Error) => void, intervalMs = MEMORY_FLUSH_INTERVAL_MS): () => void {
  let saved = store.changes;
  const save = () => {
    saved = store.changes;
    saveMemoryState(store, file);
  };
  store.onKeysChanged = save;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (delayMs: number) => {
    timer = setTimeout(tick, delayMs);
    timer.unref();
  };
  function tick() {
    if (store.changes === saved) return schedule(intervalMs);
    const started = performance.now();
    try {
      save();
    } catch (err) {
      onError(err as Error);
    }
    schedule(Math.max(intervalMs, (performance.now() - started) / MEMORY_FLUSH_MAX_SHARE));
  }
  schedule(intervalMs);
  return () => {
    clearTimeout(timer);
    timer = undefined;
    store.onKeysChanged = undefined;
  };
}

/** Write the store's state to `file` (through a temporary file and a rename, so a reader never sees half). */
export function saveMemoryState(store: MemoryStore, file: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(temporary, JSON.stringify(store.snapshot()), { mode: 0o600 });
  fs.renameSync(temporary, file);
}
