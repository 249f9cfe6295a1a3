/**
 * What a bench run measured, as tables and targets: the figures of each (server, scenario) pair against
 * the forwarder's in the same repeat, the held streams' memory, and the targets met or missed.
 */
import type { BenchChild } from './ipc';
import { median, type LoadResult, type ProbeResult } from './measure';
import { fixed, formatMarkdownTable, formatRatio, formatTextTable } from './report';
import type { BenchRequest, FloorId } from './scenarios';

/** Gap between streamed deltas in the time-to-first-byte probe; an event held by a proxy shows as a lag of one gap or more. */
export const PACED_GAP_MS = 5;

export interface Target {
  label: string;
  /**
   * `floor`: the Express floor (bench/express-floor.ts), sent the forwarder's requests; `peer`: another
   * gateway (bench/peers), sent the PEER_SCENARIOS' requests as `request` rewrites them.
   */
  kind: 'forwarder' | 'floor' | 'gateway' | 'peer';
  child: BenchChild;
  /** A peer's form of a scenario's request. */
  request?: (request: BenchRequest) => BenchRequest;
}

/** A load run with what the server spent on it. */
export interface MeasuredRun extends LoadResult {
  /** Server CPU (user + system, all threads) per completed request, µs. */
  cpu: number;
  /** Longest event-loop stall of the server during the run, ms. */
  loopMax: number;
}

/** One measured (target, scenario) pair: its runs, one per repeat, and their comparison with the forwarder. */
export interface Row {
  target: Target;
  scenario: string;
  title: string;
  floor: FloorId;
  request: BenchRequest;
  connections: number;
  /** One run per repeat. */
  runs: MeasuredRun[];
  /** rps / forwarder rps within the same repeat. */
  ratios: number[];
  /** p50 - forwarder p50 within the same repeat, ms. */
  addedP50: number[];
  /** The server's own CPU: its µs per request - the forwarder's within the same repeat. */
  ownCpu: number[];
  probe?: ProbeResult;
  /**
   * Gateway rows of the chat tool stream: the same server's native route for the same stream, probed
   * in turn with this row's (`probeTogether`), for the time-to-first-byte target.
   */
  nativeProbe?: ProbeResult;
}

export interface HeldResult {
  label: string;
  requested: number;
  opened: number;
  completed: number;
  failures: string[];
  openMs: number;
  perStreamKiB: number;
  perStreamHeapKiB: number;
  /** Heap still used per stream after a full GC with the streams open. */
  retainedHeapKiB: number;
  loopMaxOpening: number;
  loopMaxHeld: number;
  /** The 99th percentile of the event loop's lag while the streams were held, ms. */
  loopP99Held: number;
}

export interface SummaryOptions {
  reps: number;
  durationSec: number;
  connections: number;
  delayMs: number;
  streams: number;
  holdSec: number;
}

export interface Report {
  text: string;
  markdown: string;
  targets: string[];
}

/** The median over a row's repeats of one figure of its runs. */
function medianOf(row: Row, figure: 'rps' | 'p50' | 'p99' | 'cpu' | 'loopMax'): number {
  return median(row.runs.map((run) => run[figure]));
}

/** Own CPU a build may add over the --compare build on a scenario, µs per request, before it must say why (RESULTS.md). */
export const OWN_CPU_ALLOWANCE_US = 5;

/** How many times a peer gateway's requests per second this gateway (memory store) serves at least. */
export const PEER_RPS_FACTOR = 4;

/** Median own CPU (µs per request, the server's - the forwarder's in the same repeat) of a row. */
function medianOwnCpu(row: Row): number {
  return median(row.ownCpu);
}

/**
 * Each scenario measured on this build and on the --compare build, per store: the two builds' own CPU
 * per request (medians over the repeats).
 */
function ownCpuPairs(rows: Row[]): Array<{ store: string; scenario: string; before: number; now: number }> {
  const pairs: Array<{ store: string; scenario: string; before: number; now: number }> = [];
  for (const [store, nowLabel, beforeLabel] of [['memory', 'gateway (memory)', 'gateway (before)'], ['redis', 'gateway (redis)', 'gateway (before, redis)']]) {
    for (const row of rows.filter((r) => r.target.label === nowLabel && r.ownCpu.length > 0)) {
      const before = rows.find((r) => r.target.label === beforeLabel && r.scenario === row.scenario && r.ownCpu.length > 0);
      if (before) pairs.push({ store, scenario: row.scenario, before: medianOwnCpu(before), now: medianOwnCpu(row) });
    }
  }
  return pairs;
}

/** The targets of docs/benchmark.md, each `met` or `MISSED` with its figure. */
function checkTargets(rows: Row[], held: HeldResult[]): string[] {
  const find = (label: string, scenario: string) => rows.find((r) => r.target.label === label && r.scenario === scenario);
  const targets: string[] = [];
  const check = (name: string, value: number | undefined, ok: (v: number) => boolean, shown: string) => {
    if (value === undefined || !Number.isFinite(value)) return;
    targets.push(`${ok(value) ? 'met   ' : 'MISSED'}  ${name}: ${shown}`);
  };
  // With --compare: the gateway's own CPU per request never rises (within the allowance) against the build before.
  for (const { store, scenario, before, now } of ownCpuPairs(rows)) {
    check(`${scenario} (${store}) own CPU no higher than the --compare build's (+${OWN_CPU_ALLOWANCE_US} µs)`, now - before, (v) => v <= OWN_CPU_ALLOWANCE_US,
      `${fixed(before, 0)} -> ${fixed(now, 0)} µs/req (${now - before >= 0 ? '+' : ''}${fixed(now - before, 0)})`);
  }
  // Ahead of the peers: requests per second against each peer's on the same scenario, within each repeat.
  for (const peer of rows.filter((r) => r.target.kind === 'peer')) {
    const own = find('gateway (memory)', peer.scenario);
    if (!own) continue;
    const factors = own.runs.map((run, rep) => run.rps / (peer.runs[rep]?.rps ?? NaN)).filter(Number.isFinite);
    check(`${peer.scenario} (memory) >= ${PEER_RPS_FACTOR} x the ${peer.target.label}'s req/s`, factors.length ? median(factors) : undefined, (v) => v >= PEER_RPS_FACTOR,
      `${formatRatio(factors)}: ${fixed(medianOf(own, 'rps'), 0)} vs ${fixed(medianOf(peer, 'rps'), 0)} req/s`);
  }
  for (const label of ['gateway (memory)', 'gateway (redis)']) {
    const chatStream = find(label, 'chat-stream-tools');
    const nativeTtfb = chatStream?.nativeProbe?.ttfb;
    if (chatStream?.probe && nativeTtfb !== undefined) {
      const difference = chatStream.probe.ttfb - nativeTtfb;
      check(`${label}: chat stream TTFB within 1 ms of the native route's`, difference, (v) => v <= 1,
        `${fixed(chatStream.probe.ttfb, 2)} ms vs ${fixed(nativeTtfb, 2)} ms native (${difference >= 0 ? '+' : ''}${fixed(difference, 2)})`);
      // A held event waits for the next one, a gap later; the median is robust to a noisy moment on the machine.
      check(`${label}: chat stream holds no event back (median event lag under the ${PACED_GAP_MS} ms gap between events)`,
        chatStream.probe.medianEventLag, (v) => v < PACED_GAP_MS,
        `median lag ${fixed(chatStream.probe.medianEventLag, 2)} ms, max ${fixed(chatStream.probe.maxEventLag, 2)} ms`);
    }
  }
  for (const h of held.filter((x) => x.label.startsWith('gateway') && !x.label.includes('before'))) {
    check(`${h.label}: ${h.requested} open streams <= 64 KiB each`, h.opened === h.requested ? h.perStreamKiB : NaN, (v) => v <= 64, `${fixed(h.perStreamKiB, 1)} KiB`);
    if (h.opened !== h.requested) targets.push(`MISSED  ${h.label}: only ${h.opened} of ${h.requested} streams opened`);
    check(`${h.label}: no event-loop stall > 50 ms with the streams open`, h.loopMaxHeld, (v) => v <= 50,
      `${fixed(h.loopMaxHeld, 1)} ms held, ${fixed(h.loopMaxOpening, 1)} ms while opening`);
    check(`${h.label}: event-loop lag p99 < 10 ms with the streams open`, h.loopP99Held, (v) => v < 10, `${fixed(h.loopP99Held, 1)} ms`);
  }
  return targets;
}

/** The run's tables (text for the terminal, Markdown for RESULTS.md) and its targets. */
export function summarize(rows: Row[], held: HeldResult[], options: SummaryOptions): Report {
  const header = ['server', 'scenario', 'req/s', 'x forwarder', 'p50 ms', 'p99 ms', '+p50 ms', 'CPU µs/req', 'own CPU µs/req', 'loop max ms', 'c=1 ms', 'TTFB ms', 'event lag p50 ms', 'event lag max ms'];
  const table = [header];
  for (const row of rows) {
    const forwarder = row.target.kind === 'forwarder';
    table.push([
      row.target.label,
      row.title,
      fixed(medianOf(row, 'rps'), 0),
      forwarder ? '1.00' : fixed(median(row.ratios), 2),
      fixed(medianOf(row, 'p50'), 2),
      fixed(medianOf(row, 'p99'), 2),
      forwarder ? '-' : fixed(median(row.addedP50), 2),
      fixed(medianOf(row, 'cpu'), 0),
      forwarder ? '-' : fixed(medianOwnCpu(row), 0),
      fixed(medianOf(row, 'loopMax'), 1),
      fixed(row.probe?.total, 2),
      row.request.body.includes('"stream":true') ? fixed(row.probe?.ttfb, 2) : '-',
      fixed(row.probe?.medianEventLag, 2),
      fixed(row.probe?.maxEventLag, 2),
    ]);
  }
  const heldTable = [['server, stream', 'streams open', 'completed', 'KiB / stream (RSS peak)', 'KiB / stream (heap peak)', 'KiB / stream (heap after GC)', 'open all ms', 'loop max opening ms', 'loop max held ms', 'loop lag p99 held ms']];
  for (const h of held) {
    heldTable.push([h.label, `${h.opened}/${h.requested}`, String(h.completed), fixed(h.perStreamKiB, 1), fixed(h.perStreamHeapKiB, 1), fixed(h.retainedHeapKiB, 1), fixed(h.openMs, 0), fixed(h.loopMaxOpening, 1), fixed(h.loopMaxHeld, 1), fixed(h.loopP99Held, 1)]);
  }
  const targets = checkTargets(rows, held);
  const pairs = ownCpuPairs(rows);
  const compareTable = [['scenario', 'store', 'own CPU µs/req, --compare build', 'own CPU µs/req, this build', 'this / --compare']];
  for (const { store, scenario, before, now } of pairs) compareTable.push([scenario, store, fixed(before, 0), fixed(now, 0), fixed(now / before, 2)]);
  const compareMarkdown = pairs.length === 0 ? [] : [
    '### Own CPU against the --compare build', '', formatMarkdownTable(compareTable), '',
    `Own CPU: the gateway's CPU µs per request minus the forwarder's in the same repeat, medians over the repeats (target: this build no higher than the other, within ${OWN_CPU_ALLOWANCE_US} µs; more on a scenario a change does not serve is explained in RESULTS.md).`, '',
  ];
  const notes = `Columns: req/s and latencies are medians over ${options.reps} interleaved repeat(s) of ${options.durationSec} s at ${options.connections} connections unless the scenario says otherwise` +
    `${options.delayMs ? ` (upstream delay ${options.delayMs} ms)` : ''}; "x forwarder" and "+p50" compare with the forwarder run of the same repeat, for the same upstream reply;` +
    ' CPU is the server process\'s user+system time per request, "own CPU" that minus the forwarder\'s in the same repeat (what the server itself spends); "loop max" its longest event-loop stall during the run; "c=1 ms" the median time of one request at a time;' +
    ` TTFB the median time to the first body byte of a stream (one at a time, deltas ${PACED_GAP_MS} ms apart); "event lag" the median and longest time a stamped delta took from the upstream's write to the client.`;
  const heldText = held.length > 0 ? [formatTextTable(heldTable), ''] : [];
  const compareText = pairs.length > 0 ? [formatTextTable(compareTable), ''] : [];
  const text = [formatTextTable(table), '', ...compareText, ...heldText, 'Targets:', ...targets.map((t) => `  ${t}`)].join('\n');
  const heldMarkdown = held.length === 0 ? [] : [
    `### ${options.streams} streams held open`, '', formatMarkdownTable(heldTable), '',
    `Streams are opened 20 every 10 ms, held ${options.holdSec} s (one delta per stream per second), then ended by the upstream. KiB / stream = (peak RSS or heap while the streams run - the figure before they opened, after a full GC) / streams.`, '',
  ];
  const markdown = [
    '### Throughput and latency', '', formatMarkdownTable(table), '', notes, '',
    ...compareMarkdown,
    ...heldMarkdown,
    '### Targets', '', ...targets.map((t) => `- ${t.replace(/^(met|MISSED)\s+/, '**$1** ')}`),
  ].join('\n');
  return { text, markdown, targets };
}
