/**
 * The end of the event loop's current turn, as one promise shared by everything that waits for it.
 *
 * Two things wait for it, so that under load the requests of one turn go on together:
 * - the in-memory store's answers (lib/store/memory-store.ts), as a network store's replies arrive,
 *   after the turn in which the question was asked. The requests that arrived in one turn (one poll
 *   of the sockets) then pass the rest of the pipeline together, in the turn's check phase, and their
 *   upstream requests leave in one burst, instead of each between the reads of the next requests;
 * - the successful whole (non-streaming) replies of the upstream routes (`sendJsonAtEndOfTurn`,
 *   lib/json-reply.ts): the replies whose upstream answers arrived in one turn reach their clients in
 *   one burst. Streamed events are not held: each is written in the tick it is parsed.
 *
 * Measured side by side (bench/RESULTS.md, phase 8): about half the CPU per non-streaming request on
 * the memory store, and 15 % less on Redis, in user code and in the kernel alike. The work is the
 * same (the same system calls per request); what it costs falls, most likely because one step runs
 * for request after request while its code is hot, and because a burst wakes a sleeping peer process
 * once rather than once per request. Answering at once, or after a microtask, does not do it:
 * microtasks run before the next socket is read. On Redis, waiting for the end of the turn after each
 * store reply made things worse: the replies already arrive in bursts.
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

/** `value`, at the end of the current turn (see `endOfTurn`): how the in-memory store answers. */
export async function atEndOfTurn<T>(value: T): Promise<T> {
  await endOfTurn();
  return value;
}
