/**
 * The measurements: a closed-loop load run (autocannon), a one-at-a-time probe of time to first byte
 * and of how long a proxy holds each streamed event, and many streams held open at once.
 * All times in ms.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type { BenchRequest } from './scenarios';

/** Absolute high-resolution time in ms, comparable with the fake upstream's stamps. */
function now(): number {
  return performance.timeOrigin + performance.now();
}

/** The value at percentile `p` (0..100) of ascending `sorted`; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function median(values: number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

/**
 * The rows in the order of repeat `rep` (from 0): as built (each forwarder run before what is compared
 * with it), except that the gateways of each scenario take turns at going first. Identical builds
 * measured one after the other differed by position: the one run right after another server (or the
 * warm-up) was the slowest more often than not. Taking turns spreads that over all
 * of them, and the median of the repeats leaves it out.
 */
export function rowsForRepeat<T extends { target: { kind: string }; scenario: string }>(rows: T[], rep: number): T[] {
  const ordered: T[] = [];
  let i = 0;
  while (i < rows.length) {
    if (rows[i].target.kind !== 'gateway') {
      ordered.push(rows[i++]);
      continue;
    }
    let j = i;
    while (j < rows.length && rows[j].target.kind === 'gateway' && rows[j].scenario === rows[i].scenario) j++;
    const turn = rows.slice(i, j);
    const shift = rep % turn.length;
    ordered.push(...turn.slice(shift), ...turn.slice(0, shift));
    i = j;
  }
  return ordered;
}

export interface LoadResult {
  /** Completed 2xx responses. */
  requests: number;
  rps: number;
  /** Latency of 2xx responses to their last byte, sub-ms resolution. */
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}

/**
 * Drive `baseUrl` with autocannon: `connections` keep-alive connections, each sending the next request
 * as soon as the previous reply ended, for `durationSec`. Latencies are taken from autocannon's
 * per-response event (its own histogram rounds to whole ms).
 */
export function runLoad(baseUrl: string, request: BenchRequest, connections: number, durationSec: number): Promise<LoadResult> {
  const latencies: number[] = [];
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: baseUrl + request.path,
        method: 'POST',
        headers: request.headers,
        body: request.body,
        connections,
        duration: durationSec,
        timeout: 10,
      },
      (err, result) => {
        if (err) return reject(err);
        const sorted = Float64Array.from(latencies).sort();
        const ok = result['2xx'];
        resolve({
          requests: ok,
          rps: ok / (result.duration || durationSec),
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}

interface Exchange {
  status: number;
  body: string;
  /** When the response head arrived. */
  headAt: number;
  /** When the first body byte arrived. */
  firstByteAt: number;
  sentAt: number;
  /** Receive time minus send stamp of every stamped delta (`t=<ms>;`) in the body. */
  eventLags: number[];
}

const STAMP = /t=(\d+\.\d+);/g;

/** One request; records when the head, the first body byte and each stamped delta arrived. */
function exchange(agent: http.Agent, baseUrl: string, request: BenchRequest): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const url = new URL(request.path, baseUrl);
    const sentAt = now();
    const req = http.request(url, { method: 'POST', agent, headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) } });
    req.setTimeout(30_000, () => req.destroy(new Error(`no reply within 30 s from ${url.href}`)));
    req.once('error', reject);
    req.once('response', (res) => {
      const headAt = now();
      let firstByteAt = NaN;
      let body = '';
      let scanned = 0;
      const eventLags: number[] = [];
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = now();
        if (Number.isNaN(firstByteAt)) firstByteAt = at;
        body += chunk;
        // Stamps are scanned as they arrive; one split across reads is found on the next read.
        STAMP.lastIndex = Math.max(0, scanned - 20);
        for (let match = STAMP.exec(body); match; match = STAMP.exec(body)) {
          if (match.index + match[0].length <= scanned) continue;
          eventLags.push(at - Number(match[1]));
        }
        scanned = body.length;
      });
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body, headAt, firstByteAt, sentAt, eventLags }));
      res.once('error', reject);
    });
    req.end(request.body);
  });
}

/**
 * Send one request and check the reply is a complete 200 containing `marker`.
 * @throws Error describing the status and the start of the body otherwise
 */
export async function checkComplete(baseUrl: string, request: BenchRequest, marker: string): Promise<string> {
  const agent = new http.Agent({ keepAlive: false });
  const reply = await exchange(agent, baseUrl, request);
  if (reply.status !== 200 || !reply.body.includes(marker)) {
    throw new Error(`${request.path} -> ${reply.status}, expected "${marker}" in: ${reply.body.slice(0, 300)}`);
  }
  return reply.body;
}

export interface ProbeResult {
  /** Median ms from sending the request to the first body byte. */
  ttfb: number;
  /** Median ms from sending the request to the end of the reply. */
  total: number;
  /** Largest ms between the upstream sending a stamped delta and the client receiving it. */
  maxEventLag: number;
  /** Median of the per-event lags. */
  medianEventLag: number;
}

/** `count` requests one after another on one keep-alive connection (the upstream decides the pacing). */
export async function probe(baseUrl: string, request: BenchRequest, count: number): Promise<ProbeResult> {
  return (await probeTogether(baseUrl, [request], count))[0];
}

/**
 * As {@link probe} for several requests measured together: `count` rounds of one of each, in turn,
 * one at a time, each request on a keep-alive connection of its own. Two figures compared with each
 * other (the chat route's time to first byte against the native route's) are then taken over the same
 * moments of a shared machine, not one noisy stretch against another.
 * @returns one result per request, in the order of `requests`
 * @throws Error when a reply is not a 200
 */
export async function probeTogether(baseUrl: string, requests: BenchRequest[], count: number): Promise<ProbeResult[]> {
  const samples = requests.map(() => ({ agent: new http.Agent({ keepAlive: true, maxSockets: 1 }), ttfbs: [] as number[], totals: [] as number[], lags: [] as number[] }));
  try {
    for (let i = 0; i < count; i++) {
      for (const [index, request] of requests.entries()) {
        const sample = samples[index];
        const reply = await exchange(sample.agent, baseUrl, request);
        const done = now();
        if (reply.status !== 200) throw new Error(`${request.path} -> ${reply.status}: ${reply.body.slice(0, 300)}`);
        sample.ttfbs.push(reply.firstByteAt - reply.sentAt);
        sample.totals.push(done - reply.sentAt);
        sample.lags.push(...reply.eventLags);
      }
    }
  } finally {
    for (const sample of samples) sample.agent.destroy();
  }
  return samples.map(({ ttfbs, totals, lags }) => ({
    ttfb: median(ttfbs),
    total: median(totals),
    maxEventLag: lags.length ? Math.max(...lags) : NaN,
    medianEventLag: median(lags),
  }));
}

export interface HeldStreams {
  /** Streams whose first byte arrived. */
  opened: number;
  /** Streams that then ended complete (with the marker). */
  completed: number;
  failures: string[];
  /** ms until every stream had its first byte. */
  openMs: number;
  close(): Promise<void>;
}

/**
 * Open `count` streams, `batch` (20) at a time every `batchGapMs` (10 ms): clients do not all arrive in one ms,
 * and resolve once each had its first byte (or `timeoutMs` passed). The streams stay open until the
 * upstream ends them; `close()` then waits for their ends.
 */
export async function openStreams(
  baseUrl: string, request: BenchRequest, marker: string, count: number,
  options: { batch?: number; batchGapMs?: number; timeoutMs?: number } = {},
): Promise<HeldStreams> {
  const batch = options.batch ?? 20;
  const gap = options.batchGapMs ?? 10;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const started = now();
  let opened = 0;
  let completed = 0;
  const failures: string[] = [];
  const ends: Array<Promise<void>> = [];
  const firsts: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    if (i > 0 && i % batch === 0) await new Promise((r) => setTimeout(r, gap));
    let markOpen!: () => void;
    firsts.push(new Promise<void>((r) => (markOpen = r)));
    ends.push(
      new Promise<void>((resolve) => {
        const req = http.request(new URL(request.path, baseUrl), {
          method: 'POST', agent, headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        });
        const fail = (why: string) => {
          if (failures.length < 5) failures.push(why);
          markOpen();
          resolve();
        };
        req.once('error', (err) => fail(err.message));
        req.once('response', (res) => {
          let tail = '';
          res.setEncoding('utf8');
          res.once('data', () => {
            opened++;
            markOpen();
          });
          res.on('data', (chunk: string) => (tail = (tail + chunk).slice(-200)));
          res.once('end', () => {
            if (res.statusCode === 200 && tail.includes(marker)) completed++;
            else fail(`status ${res.statusCode}, ended without "${marker}"`);
            resolve();
          });
          res.once('error', (err) => fail(err.message));
        });
        req.end(request.body);
      }),
    );
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  await Promise.race([Promise.all(firsts), new Promise((r) => setTimeout(r, timeoutMs))]);
  const openMs = now() - started;
  return {
    get opened() {
      return opened;
    },
    get completed() {
      return completed;
    },
    failures,
    openMs,
    async close() {
      await Promise.race([Promise.all(ends), new Promise((r) => setTimeout(r, timeoutMs))]);
      agent.destroy();
    },
  };
}
