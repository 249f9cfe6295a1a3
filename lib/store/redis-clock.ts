/**
 * The Redis server's clock as this process sees it, so that an admission can carry its deadline in
 * the server's time (the ADMIT script reads `TIME` and does nothing past it). Measured on connect and
 * once a minute (never per request): `TIME` between two readings of this process's clock.
 */

/** Where a server's clock stands against this process's, from one or more `TIME` readings. */
export interface ClockReading {
  /** Server ms minus this process's ms at the same instant, as measured (the round trip's midpoint). */
  offsetMs: number;
  /** Half the measuring round trip, ms: the true offset is within `offsetMs` ± this. */
  uncertaintyMs: number;
}

/** How often the offset is measured again while connected: once a minute. */
export const CLOCK_REFRESH_MS = 60_000;

/**
 * Epoch ms of a `TIME` reply (`[unix seconds, microseconds]`, as strings).
 * @throws RangeError when the reply is not two integers
 */
export function timeReplyMs(reply: readonly unknown[]): number {
  const [seconds, micros] = reply.map(Number);
  if (reply.length !== 2 || !Number.isInteger(seconds) || !Number.isInteger(micros)) throw new RangeError(`unexpected TIME reply: ${JSON.stringify(reply)}`);
  return seconds * 1000 + Math.floor(micros / 1000);
}

/**
 * Measure one server's clock: `readTime` (its `TIME` command) between two readings of `now`.
 * @throws whatever `readTime` throws (the server cannot be reached)
 */
export async function measureClock(readTime: () => Promise<readonly unknown[]>, now: () => number = Date.now): Promise<ClockReading> {
  const sent = now();
  const serverMs = timeReplyMs(await readTime());
  const received = now();
  return { offsetMs: serverMs - (sent + received) / 2, uncertaintyMs: (received - sent) / 2 };
}

/**
 * The reading that is safe for every one of several servers (the primaries of a cluster): the one
 * whose clock can be earliest (least `offsetMs - uncertaintyMs`), so a deadline converted with it
 * is never later on any of them than on this process's clock.
 * @throws RangeError when `readings` is empty
 */
export function earliestClock(readings: readonly ClockReading[]): ClockReading {
  if (readings.length === 0) throw new RangeError('no clock readings');
  return readings.reduce((a, b) => (b.offsetMs - b.uncertaintyMs < a.offsetMs - a.uncertaintyMs ? b : a));
}

/**
 * `localMs` (epoch ms on this process's clock) as a server with `clock` reads it, rounded down and
 * taken at the early end of the measurement's uncertainty: a deadline converted so never falls later
 * on the server than on this process's clock.
 */
export function toServerMs(localMs: number, clock: ClockReading): number {
  return Math.floor(localMs + clock.offsetMs - clock.uncertaintyMs);
}

/** An uncertainty every refreshed reading may have, ms: a loopback or LAN round trip under load. */
const PRECISE_ENOUGH_MS = 25;

/**
 * Keep `measure`'s reading: measured now (its failure is thrown: the connection is not usable), then
 * every `everyMs` while `stop` is not called (a failed measurement keeps the last reading, and so does one
 * less precise than twice the last one's uncertainty, beyond PRECISE_ENOUGH_MS).
 * @returns the latest reading and a `stop` that ends the timer
 */
export async function keepClock(measure: () => Promise<ClockReading>, everyMs = CLOCK_REFRESH_MS): Promise<{ reading: () => ClockReading; refresh: () => Promise<void>; stop: () => void }> {
  let latest = await measure();
  const refresh = async () => {
    const next = await measure().catch(() => latest);
    // A reading taken while this process lagged has a wide uncertainty, which every deadline would lose
    // (toServerMs): the last precise one serves instead (an offset drifts by far less in a minute).
    if (next.uncertaintyMs <= Math.max(2 * latest.uncertaintyMs, PRECISE_ENOUGH_MS)) latest = next;
  };
  const timer = setInterval(() => void refresh(), everyMs);
  timer.unref();
  return { reading: () => latest, refresh, stop: () => clearInterval(timer) };
}
