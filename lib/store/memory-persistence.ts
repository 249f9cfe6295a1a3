/**
 * Keeps the in-memory store across a graceful restart of a single instance: the state (keys, secret
 * hashes, spend, usage ledger) is written to a JSON file when the server stops and read back at start.
 * A crash loses what happened since the last start; several instances never see each other's state.
 * Both need the Redis store.
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

/** Write the store's state to `file` (through a temporary file and a rename, so a reader never sees half). */
export function saveMemoryState(store: MemoryStore, file: string): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(temporary, JSON.stringify(store.snapshot()), { mode: 0o600 });
  fs.renameSync(temporary, file);
}
