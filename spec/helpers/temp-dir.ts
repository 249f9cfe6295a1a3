/**
 * Temporary directories of the test run, removed when the run's process exits (mocha runs with
 * `exit: true`; the `exit` event is synchronous, as `fs.rmSync` is). For files a test hands to code
 * that may still read them until the end (a config file a gateway reloads), where no hook of the test
 * itself can tell when they are free.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const created: string[] = [];

/**
 * A new empty directory under the system's temporary directory, named `prefix` and a random suffix.
 * @returns its absolute path; it and what it holds are removed at the process's exit
 */
export function tempDir(prefix: string): string {
  if (created.length === 0) {
    process.once('exit', () => {
      for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(dir);
  return dir;
}
