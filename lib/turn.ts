/**
 * The end of the event loop's current turn, as one promise shared by everything that waits for it.
 *
 * The in-memory store answers through it (lib/store/memory-store.ts), as a network store's replies
 * arrive: after the turn in which the question was asked. Under load that makes the requests that
 * arrived in one turn (one poll of the sockets) go on through the pipeline together, in the turn's
 * check phase, so their upstream requests leave in one burst rather than each between the reads of
 * the next requests. Measured (bench/RESULTS.md, phase 8): 25 to 30 % less CPU per request on the
 * native and chat-completions routes, from fewer wake-ups of the peer processes and code that stays
 * hot while the same step runs for request after request. Answering at once (a resolved promise, or a
 * microtask) did not do it: microtasks run before the next socket is read.
 */

let turnEnd: Promise<void> | null = null;

/**
 * A promise that resolves in the check phase of the current turn of the event loop (`setImmediate`):
 * after the I/O callbacks of this turn, before the next poll. Every caller in one turn gets the same
 * promise, so a turn costs one timer and one promise whatever the number of waiters; those that ask
 * while it resolves get the next turn's. Never rejects.
 */
export function endOfTurn(): Promise<void> {
  return (turnEnd ??= new Promise((resolve) => {
    setImmediate(() => {
      turnEnd = null;
      resolve();
    });
  }));
}
