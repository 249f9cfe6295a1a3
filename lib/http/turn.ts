/**
 * The end of the event loop's current turn, as one promise shared by everything that waits for it.
 *
 * Kept for speed (bench/RESULTS.md, "Mechanisms kept for speed"): under load, the requests of one
 * turn then go on together. Two things wait for it:
 * - the in-memory store's answers to a request's calls (lib/store/memory-store.ts), as a network
 *   store's replies arrive: after the turn in which the question was asked. The requests whose
 *   sockets were read in one turn pass the rest of the pipeline together, in the turn's check phase,
 *   and their upstream requests leave in one burst, instead of each between the reads of the next;
 * - the whole (non-streamed) replies of the upstream routes (routes/reply.ts): the replies whose
 *   upstream answers arrived in one turn reach their clients in one burst. Streamed events are never
 *   held: each is written in the tick it is parsed.
 * The work is the same (the same system calls per request); what it costs falls, because one step
 * runs for request after request while its code is hot, and a burst wakes a sleeping peer process
 * once rather than once per request. Answering after a microtask does not do it: microtasks run
 * before the next socket is read. The Redis store needs none: its replies already arrive in bursts.
 */

let turnEnd: Promise<void> | null = null;

/**
 * A promise that resolves in the check phase of the current turn of the event loop (`setImmediate`):
 * after the I/O callbacks of this turn, before the next poll. Every caller in one turn gets the same
 * promise, so a turn costs one immediate and one promise whatever the number of waiters; those that
 * ask while it resolves get the next turn's. Never rejects.
 */
export function endOfTurn(): Promise<void> {
  return (turnEnd ??= new Promise((resolve) => {
    setImmediate(() => {
      turnEnd = null;
      resolve();
    });
  }));
}

/** `value`, at the end of the current turn (see {@link endOfTurn}): how the in-memory store answers. */
export async function atEndOfTurn<T>(value: T): Promise<T> {
  await endOfTurn();
  return value;
}
