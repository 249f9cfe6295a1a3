/**
 * `npm run bench`: the gateway side by side with a bare http-proxy forwarder, both in front of the same
 * local fake upstream, in one run. Each server is a child process; autocannon drives them from this one.
 *
 * A third server, the design floor (bench/design-floor.ts: Express, express.json and http-proxy with none
 * of the gateway's steps), runs the native non-streaming scenario: the design used plainly.
 *
 * Runs are interleaved (forwarder, gateway on the memory store, gateway on the Redis store, for one
 * scenario, then the next scenario) and repeated; figures are medians over the repeats, and ratios are
 * taken within one repeat, so a noisy moment of the shared machine hits both sides alike.
 *
 * Options: `npm run bench -- --help` (USAGE below).
 * Exit status 1 when any request failed or a scenario produced no numbers, 2 on a mistake in the options.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { compareDirectory, exitWithError, parseCommandLine, UsageError } from './cli';
import { startChild, type BenchChild, type ProcessStats } from './ipc';
import { checkComplete, cpuBudgetMicros, median, openStreams, probe, probeTogether, ratioForAddedP50, rowsForRepeat, runLoad, type LoadResult, type ProbeResult } from './measure';
import { benchKeyPrefix, benchRedisUrl, cleanRedis, redisReachable } from './redis';
import { describeMachine, describeMachineMarkdown, fixed, formatMarkdownTable, formatRatio, formatTextTable, writeResultsSection } from './report';
import { FLOORS, SCENARIO_IDS, SCENARIOS, type BenchRequest, type FloorId } from './scenarios';

const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** Gap between streamed deltas in the time-to-first-byte probe; an event held by a proxy shows as a lag of one gap or more. */
const PACED_GAP_MS = 5;

interface Options {
  smoke: boolean;
  durationSec: number;
  warmupSec: number;
  reps: number;
  connections: number;
  delayMs: number;
  streams: number;
  holdSec: number;
  probeCount: number;
  redis: boolean;
  only: RegExp | null;
  profile: boolean;
  out: string | null;
  /** A `dist` directory of another build whose gateway runs side by side as "gateway (before)". */
  compare: string | null;
}

const USAGE = `usage: npm run bench -- [options]   (or: node dist/bench/run.js [options])

  --smoke            about a second per scenario, 200 held streams, no warm-up; checks that numbers
                     come out and nothing failed (writes no results file)
  --duration=S       seconds of each measured run (default 5; smoke 1)
  --reps=N           repeats of every run, taking turns (default 3; smoke 1)
  --connections=N    connections of the load generator (default 32)
  --delay-ms=N       the fake upstream answers after N ms (default 0)
  --streams=N        streams held open at once in the memory test (default 2000; smoke 200; 0: no test)
  --hold=S           seconds those streams are held (default 3; smoke 1)
  --no-redis         leave out the Redis store's scenarios
  --only=REGEX       only the scenarios whose id matches: ${SCENARIO_IDS}
  --profile          run the memory gateway with --cpu-prof; profiles go to bench/profiles/
  --out=FILE         where the results section is written (default bench/RESULTS.md; - for none)
  --compare=DIR      also run the gateway built in DIR (a dist of another commit) as "gateway (before)",
                     and on Redis as "gateway (before, redis)": what a change buys, in one run
  -h, --help         this text`;

function parseOptions(argv: string[]): Options {
  const { values } = parseCommandLine(argv, {
    options: {
      smoke: { type: 'boolean', default: false },
      duration: { type: 'string' },
      reps: { type: 'string' },
      connections: { type: 'string', default: '32' },
      'delay-ms': { type: 'string', default: '0' },
      streams: { type: 'string' },
      hold: { type: 'string' },
      'no-redis': { type: 'boolean', default: false },
      only: { type: 'string' },
      profile: { type: 'boolean', default: false },
      out: { type: 'string' },
      compare: { type: 'string' },
    },
  }, USAGE);
  const smoke = values.smoke!;
  const number = (value: string | undefined, fallback: number, name: string) => {
    const n = value === undefined ? fallback : Number(value);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`--${name}: "${value}" is not a number of 0 or more`);
    return n;
  };
  const out = values.out ?? (smoke ? '-' : path.join(REPO_ROOT, 'bench', 'RESULTS.md'));
  let only: RegExp | null = null;
  try {
    only = values.only ? new RegExp(values.only) : null;
  } catch (err) {
    throw new UsageError(`--only: ${(err as Error).message}`);
  }
  if (only && !SCENARIOS.some((scenario) => only!.test(scenario.id))) {
    throw new UsageError(`--only: "${values.only}" matches no scenario id (${SCENARIO_IDS})`);
  }
  return {
    smoke,
    durationSec: number(values.duration, smoke ? 1 : 5, 'duration'),
    warmupSec: smoke ? 0 : 2,
    reps: Math.max(1, Math.round(number(values.reps, smoke ? 1 : 3, 'reps'))),
    connections: Math.max(1, Math.round(number(values.connections, 32, 'connections'))),
    delayMs: number(values['delay-ms'], 0, 'delay-ms'),
    streams: Math.round(number(values.streams, smoke ? 200 : 2000, 'streams')),
    holdSec: number(values.hold, smoke ? 1 : 3, 'hold'),
    probeCount: smoke ? 5 : 30,
    redis: !values['no-redis'],
    only,
    profile: values.profile!,
    out: out === '-' ? null : path.resolve(out),
    compare: values.compare ? compareDirectory(values.compare) : null,
  };
}

interface Target {
  label: string;
  /** `floor`: the design floor (bench/design-floor.ts), run on the native non-streaming scenario only. */
  kind: 'forwarder' | 'gateway' | 'floor';
  child: BenchChild;
}

/** A load run with what the server spent on it. */
interface MeasuredRun extends LoadResult {
  /** Server CPU (user + system, all threads) per completed request, µs. */
  cpu: number;
  /** The kernel's part of it (system time), µs. */
  kernel: number;
  /** CPU time of the server's main thread (its event loop) per completed request, µs. */
  main: number;
  /** That time over the run's wall time: 1.00 when the event loop never waited for work. */
  mainBusy: number;
  /** Longest event-loop stall of the server during the run, ms. */
  loopMax: number;
}

/** One measured (target, scenario) pair: its runs, one per repeat, and their comparison with the forwarder. */
interface Row {
  target: Target;
  scenario: string;
  title: string;
  floor: FloorId;
  request: BenchRequest;
  /** One run per repeat, with what the server spent on it. */
  runs: MeasuredRun[];
  /** rps / floor rps within the same repeat. */
  ratios: number[];
  /** p50 - floor p50 within the same repeat, ms. */
  addedP50: number[];
  probe?: ProbeResult;
  /**
   * Gateway rows of the chat tool stream: the same server's native route for the same stream, probed
   * in turn with this row's (`probeTogether`), for the time-to-first-byte target.
   */
  nativeProbe?: ProbeResult;
}

interface HeldResult {
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
}

/** Failures: requests that failed, scenarios without numbers. They make the exit status 1. */
const problems: string[] = [];
/** Scenarios that could not run as intended in this build (printed and written, exit status unaffected). */
const warnings: string[] = [];

function log(text: string): void {
  process.stdout.write(`${text}\n`);
}

function cpuMicros(stats: ProcessStats): number {
  return stats.cpuUserMicros + stats.cpuSystemMicros;
}

/** One load run of `row`, with the server's CPU time and loop stall over it. */
async function measure(row: Row, options: Options, seconds: number): Promise<MeasuredRun> {
  await row.target.child.call('resetLoop');
  const before = await row.target.child.stats();
  const started = performance.now();
  const result = await runLoad(row.target.child.url, row.request, options.connections, seconds);
  const wallMicros = (performance.now() - started) * 1000;
  const after = await row.target.child.stats();
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0 || result.requests === 0) {
    problems.push(`${row.target.label} ${row.scenario}: ${result.requests} ok, ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  const served = Math.max(1, result.requests);
  const main = after.mainThreadCpuMicros - before.mainThreadCpuMicros;
  return Object.assign(result, {
    cpu: (cpuMicros(after) - cpuMicros(before)) / served,
    kernel: (after.cpuSystemMicros - before.cpuSystemMicros) / served,
    main: main / served,
    mainBusy: main / wallMicros,
    loopMax: after.loopDelayMaxMs,
  });
}

const script = (name: string) => path.join(__dirname, `${name}.js`);

/** Prefix of every Redis key this run's gateways write; removed at the end. */
const REDIS_PREFIX = benchKeyPrefix();

async function startGatewayChild(label: string, upstream: BenchChild, store: 'memory' | 'redis', logFd: number, options: Options, dist?: string): Promise<Target> {
  const execArgv = options.profile && store === 'memory' ? ['--cpu-prof', `--cpu-prof-dir=${path.join(REPO_ROOT, 'bench', 'profiles')}`] : [];
  const file = dist ? path.join(dist, 'bench', 'gateway.js') : script('gateway');
  const child = await startChild(label, file, [upstream.url, store], {
    stdout: logFd,
    execArgv,
    env: { BENCH_KEY_PREFIX: REDIS_PREFIX },
  });
  return { label, kind: 'gateway', child };
}

/** Open many streams on a fresh server and read what they cost it. */
async function holdStreams(label: string, start: () => Promise<BenchChild>, upstream: BenchChild, request: BenchRequest, marker: string, options: Options): Promise<HeldResult> {
  const child = await start();
  try {
    await upstream.call('mode', { name: 'hold' });
    await checkComplete(child.url, FLOORS['native-json'].request, '"type":"message"');
    await child.call('gc');
    await new Promise((r) => setTimeout(r, 200));
    await child.call('resetPeak');
    const baseline = await child.stats();
    await child.call('resetLoop');
    const streams = await openStreams(child.url, request, marker, options.streams);
    const opening = await child.stats();
    await child.call('resetLoop');
    await new Promise((r) => setTimeout(r, options.holdSec * 1000));
    const held = await child.stats();
    // What the open streams keep (garbage collected away), as opposed to the peak they cost while running.
    await child.call('gc');
    const retained = await child.stats();
    const released = await upstream.call<number>('release');
    await streams.close();
    const opened = streams.opened;
    if (streams.completed !== options.streams) {
      problems.push(`${label}: ${options.streams} streams asked, ${opened} opened, ${streams.completed} completed (upstream released ${released}); ${streams.failures.join('; ')}`);
    }
    const peakRss = Math.max(opening.peakRssBytes, held.peakRssBytes);
    const peakHeap = Math.max(opening.peakHeapUsedBytes, held.peakHeapUsedBytes);
    return {
      label,
      requested: options.streams,
      opened,
      completed: streams.completed,
      failures: streams.failures,
      openMs: streams.openMs,
      perStreamKiB: (peakRss - baseline.rssBytes) / Math.max(1, opened) / 1024,
      perStreamHeapKiB: (peakHeap - baseline.heapUsedBytes) / Math.max(1, opened) / 1024,
      retainedHeapKiB: (retained.heapUsedBytes - baseline.heapUsedBytes) / Math.max(1, opened) / 1024,
      loopMaxOpening: opening.loopDelayMaxMs,
      loopMaxHeld: held.loopDelayMaxMs,
    };
  } finally {
    await upstream.call('mode', { name: 'burst', delayMs: options.delayMs });
    await child.stop();
  }
}

function buildRows(targets: Target[], options: Options): Row[] {
  const rows: Row[] = [];
  const floorsUsed = new Set<FloorId>();
  const gatewayScenarios = SCENARIOS.filter((s) => !options.only || options.only.test(s.id));
  for (const scenario of gatewayScenarios) floorsUsed.add(scenario.floor);
  const empty = () => ({ runs: [], ratios: [], addedP50: [] });
  // Order: each floor, then every gateway scenario compared with it, so comparisons are measured together.
  for (const floor of floorsUsed) {
    for (const target of targets.filter((t) => t.kind === 'forwarder')) {
      rows.push({ target, scenario: floor, title: FLOORS[floor].title, floor, request: FLOORS[floor].request, ...empty() });
    }
    for (const scenario of gatewayScenarios.filter((s) => s.floor === floor)) {
      for (const target of targets.filter((t) => t.kind === 'gateway' || (t.kind === 'floor' && scenario.id === 'native-json'))) {
        rows.push({ target, scenario: scenario.id, title: scenario.title, floor, request: scenario.request, ...empty() });
      }
    }
  }
  return rows;
}

function markerOf(row: Row): string {
  return row.target.kind === 'forwarder' ? FLOORS[row.floor].completeMarker : SCENARIOS.find((s) => s.id === row.scenario)!.completeMarker;
}

async function runLoadPhase(rows: Row[], options: Options): Promise<void> {
  for (const row of rows) {
    const body = await checkComplete(row.target.child.url, row.request, markerOf(row));
    if (row.scenario === 'chat-stream-tools' && !body.includes('"tool_calls"')) {
      warnings.push(`${row.target.label} chat-stream-tools: the stream carries no tool_calls deltas (translator without tool support?)`);
    }
  }
  if (options.warmupSec > 0) {
    log(`warming up (${options.warmupSec} s per scenario)...`);
    for (const row of rows) await runLoad(row.target.child.url, row.request, options.connections, options.warmupSec);
  }
  const labelWidth = Math.max(...rows.map((row) => row.target.label.length));
  for (let rep = 0; rep < options.reps; rep++) {
    log(`repeat ${rep + 1}/${options.reps}`);
    const floorOfRep = new Map<FloorId, LoadResult>();
    for (const row of rowsForRepeat(rows, rep)) {
      const result = await measure(row, options, options.durationSec);
      row.runs.push(result);
      if (row.target.kind === 'forwarder') floorOfRep.set(row.floor, result);
      const floor = floorOfRep.get(row.floor);
      if (floor) {
        row.ratios.push(result.rps / floor.rps);
        row.addedP50.push(result.p50 - floor.p50);
      }
      log(`  ${row.target.label.padEnd(labelWidth)} ${row.scenario.padEnd(20)} ${fixed(result.rps, 0).padStart(7)} req/s  p50 ${fixed(result.p50, 2)} ms  p99 ${fixed(result.p99, 2)} ms  cpu ${fixed(result.cpu, 0)} µs/req`);
    }
  }
}

async function runProbePhase(rows: Row[], upstream: BenchChild, options: Options): Promise<void> {
  log(`probing time to first byte and event lag (${options.probeCount} requests each, one at a time, deltas ${PACED_GAP_MS} ms apart)...`);
  await upstream.call('mode', { name: 'paced', gapMs: PACED_GAP_MS });
  try {
    for (const row of rows) {
      if (row.scenario.includes('200')) continue; // 200 deltas x the gap: too slow to probe, same path as 5 deltas
      const stream = row.target.kind === 'forwarder' ? FLOORS[row.floor].stream : SCENARIOS.find((s) => s.id === row.scenario)!.stream;
      if (row.scenario === 'chat-stream-tools') {
        [row.probe, row.nativeProbe] = await probeTogether(row.target.child.url, [row.request, FLOORS['native-stream-tools'].request], options.probeCount);
      } else if (stream) row.probe = await probe(row.target.child.url, row.request, options.probeCount);
    }
  } finally {
    await upstream.call('mode', { name: 'burst', delayMs: options.delayMs });
  }
  for (const row of rows) {
    if (!row.probe && !row.scenario.includes('stream')) row.probe = await probe(row.target.child.url, row.request, options.probeCount);
  }
}

interface Report {
  text: string;
  markdown: string;
  targets: string[];
}

/** The median over a row's repeats of one figure of its runs. */
function medianOf(row: Row, figure: 'rps' | 'p50' | 'p99' | 'cpu' | 'kernel' | 'main' | 'mainBusy' | 'loopMax'): number {
  return median(row.runs.map((run) => run[figure]));
}

function summarize(rows: Row[], held: HeldResult[], options: Options): Report {
  const header = ['server', 'scenario', 'req/s', 'x forwarder', 'p50 ms', 'p99 ms', '+p50 ms', 'CPU µs/req', 'kernel µs/req', 'main thread µs/req', 'main thread busy', 'loop max ms', 'c=1 ms', 'TTFB ms', 'event lag p50 ms', 'event lag max ms'];
  const table = [header];
  for (const row of rows) {
    const floor = row.target.kind === 'forwarder';
    table.push([
      row.target.label,
      row.title,
      fixed(medianOf(row, 'rps'), 0),
      floor ? '1.00' : fixed(median(row.ratios), 2),
      fixed(medianOf(row, 'p50'), 2),
      fixed(medianOf(row, 'p99'), 2),
      floor ? '-' : fixed(median(row.addedP50), 2),
      fixed(medianOf(row, 'cpu'), 0),
      fixed(medianOf(row, 'kernel'), 0),
      fixed(medianOf(row, 'main'), 0),
      fixed(medianOf(row, 'mainBusy'), 2),
      fixed(medianOf(row, 'loopMax'), 1),
      fixed(row.probe?.total, 2),
      row.request.body.includes('"stream":true') ? fixed(row.probe?.ttfb, 2) : '-',
      fixed(row.probe?.medianEventLag, 2),
      fixed(row.probe?.maxEventLag, 2),
    ]);
  }
  const heldTable = [['server, stream', 'streams open', 'completed', 'KiB / stream (RSS peak)', 'KiB / stream (heap peak)', 'KiB / stream (heap after GC)', 'open all ms', 'loop max opening ms', 'loop max held ms']];
  for (const h of held) {
    heldTable.push([h.label, `${h.opened}/${h.requested}`, String(h.completed), fixed(h.perStreamKiB, 1), fixed(h.perStreamHeapKiB, 1), fixed(h.retainedHeapKiB, 1), fixed(h.openMs, 0), fixed(h.loopMaxOpening, 1), fixed(h.loopMaxHeld, 1)]);
  }

  const find = (label: RegExp, scenario: string) => rows.find((r) => label.test(r.target.label) && r.scenario === scenario);
  const targets: string[] = [];
  const check = (name: string, value: number | undefined, ok: (v: number) => boolean, shown: string) => {
    if (value === undefined || !Number.isFinite(value)) return;
    targets.push(`${ok(value) ? 'met   ' : 'MISSED'}  ${name}: ${shown}`);
  };
  const ratio = (row?: Row) => (row ? median(row.ratios) : undefined);
  const shownRatio = (row?: Row) => formatRatio(row?.ratios ?? []);
  const nativeJson = find(/^gateway \(memory\)$/, 'native-json');
  check('native non-streaming (memory) >= 0.6 x forwarder req/s', ratio(nativeJson), (v) => v >= 0.6, shownRatio(nativeJson));
  const designFloor = find(/^design floor$/, 'native-json');
  if (designFloor && nativeJson && ratio(designFloor)! > 0) {
    targets.push(`note    design floor (Express + express.json + http-proxy, no gateway step) on native non-streaming: ${fixed(ratio(designFloor), 2)} x forwarder; ` +
      `the gateway (memory) makes ${fixed(ratio(nativeJson)! / ratio(designFloor)!, 2)} x its req/s`);
  }
  const added = nativeJson ? median(nativeJson.addedP50) : undefined;
  check('native non-streaming (memory) p50 added <= 1 ms', added, (v) => v <= 1, `${fixed(added, 2)} ms`);
  const forwarder = find(/^forwarder$/, 'native-json');
  if (forwarder && nativeJson) {
    // What the two native targets ask of a server whose one event loop limits it (see cpuBudgetMicros, ratioForAddedP50).
    const forwarderRps = medianOf(forwarder, 'rps');
    const main = (row?: Row) => (row ? `${fixed(medianOf(row, 'main'), 0)} µs (busy ${fixed(medianOf(row, 'mainBusy'), 2)} of the time)` : '-');
    targets.push(`note    CPU budget: 0.6 x the forwarder's ${fixed(forwarderRps, 0)} req/s leaves an event loop ${fixed(cpuBudgetMicros(forwarderRps, 0.6), 0)} µs of CPU per request; ` +
      `the design floor's main thread used ${main(designFloor)}, the gateway's (memory) ${main(nativeJson)}`);
    const forwarderP50 = medianOf(forwarder, 'p50');
    targets.push(`note    at ${options.connections} connections, latency goes as 1 / req/s: p50 added <= 1 ms needs about ${fixed(ratioForAddedP50(forwarderP50, 1), 2)} x the forwarder's req/s (its p50: ${fixed(forwarderP50, 2)} ms)`);
  }
  const chatJson = find(/^gateway \(memory\)$/, 'chat-json');
  check('chat-completions non-streaming (memory) >= 0.5 x forwarder', ratio(chatJson), (v) => v >= 0.5, shownRatio(chatJson));
  for (const scenario of ['native-json', 'chat-json']) {
    const redisRow = find(/^gateway \(redis\)$/, scenario);
    check(`${scenario} (Redis store) >= 0.5 x forwarder`, ratio(redisRow), (v) => v >= 0.5, shownRatio(redisRow));
  }
  for (const label of ['gateway (memory)', 'gateway (redis)']) {
    const chatStream = rows.find((r) => r.target.label === label && r.scenario === 'chat-stream-tools');
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
    const stall = Math.max(h.loopMaxOpening, h.loopMaxHeld);
    check(`${h.label}: no event-loop stall > 50 ms with the streams open`, h.loopMaxHeld, (v) => v <= 50,
      `${fixed(h.loopMaxHeld, 1)} ms held, ${fixed(h.loopMaxOpening, 1)} ms while opening (max ${fixed(stall, 1)})`);
  }

  const notes = [
    `Columns: req/s and latencies are medians over ${options.reps} interleaved repeat(s) of ${options.durationSec} s at ${options.connections} connections (the gateways of a scenario taking turns at going first)` +
      `${options.delayMs ? ` (upstream delay ${options.delayMs} ms)` : ''}; "x forwarder" and "+p50" compare with the forwarder run of the same repeat, for the same upstream reply;` +
      ` CPU is the server process's user+system time per request (all its threads), "kernel" the system part of it, "main thread" the CPU time of the thread that runs the event loop, per request and as a share of the run's wall time (1.00: the loop never waited for work); "loop max" its longest event-loop stall during the run; "c=1 ms" the median time of one request at a time;` +
      ` TTFB the median time to the first body byte of a stream (one at a time, deltas ${PACED_GAP_MS} ms apart; a gateway's chat tool stream in turn with its native route's, which the TTFB target compares it with); "event lag max" the median and longest time a stamped delta took from the upstream's write to the client.`,
  ];
  const heldText = held.length > 0 ? [formatTextTable(heldTable), ''] : [];
  const text = [formatTextTable(table), '', ...heldText, 'Targets:', ...targets.map((t) => `  ${t}`)].join('\n');
  const heldMarkdown = held.length === 0 ? [] : [
    `### ${options.streams} streams held open`, '', formatMarkdownTable(heldTable), '',
    `Streams are opened 20 every 10 ms, held ${options.holdSec} s (the upstream sends one delta per stream per second), then ended by the upstream. KiB / stream = (peak RSS or heap while the streams run - the figure before they opened, after a full GC) / streams; "heap after GC" is what they keep once garbage is collected. The loop stalls include the time the process waited for a core on this shared machine (compare the forwarder's).`, '',
  ];
  const markdown = [
    '### Throughput and latency', '', formatMarkdownTable(table), '', ...notes, '',
    ...heldMarkdown,
    '### Targets', '', ...targets.map((t) => `- ${t.replace(/^(met|MISSED)\s+/, '**$1** ')}`),
  ].join('\n');
  return { text, markdown, targets };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const machine = describeMachine(REPO_ROOT);
  log(`model-gateway bench${options.smoke ? ' (smoke)' : ''}: ${machine.cpus} CPUs, ${machine.cpuModel}, Node ${machine.node}, load average ${machine.loadAverage}`);
  const logFile = path.join(os.tmpdir(), `gateway-bench-${process.pid}.log`);
  const logFd = fs.openSync(logFile, 'w');
  const children: BenchChild[] = [];
  const track = <T extends BenchChild | Target>(x: T): T => {
    children.push('child' in x ? x.child : x);
    return x;
  };
  try {
    const upstream = track(await startChild('upstream', script('upstream'), []));
    await upstream.call('mode', { name: 'burst', delayMs: options.delayMs });
    const targets: Target[] = [
      { label: 'forwarder', kind: 'forwarder', child: track(await startChild('forwarder', script('forwarder'), [upstream.url])) },
      { label: 'design floor', kind: 'floor', child: track(await startChild('design floor', script('design-floor'), [upstream.url])) },
      track(await startGatewayChild('gateway (memory)', upstream, 'memory', logFd, options)),
    ];
    if (options.compare) targets.push(track(await startGatewayChild('gateway (before)', upstream, 'memory', logFd, options, options.compare)));
    const redisUrl = benchRedisUrl();
    if (options.redis) {
      if (!(await redisReachable(redisUrl))) {
        warnings.push(`Redis scenarios not run: no Redis server at ${redisUrl} (run with --no-redis to leave them out)`);
      } else {
        const redisTarget = track(await startGatewayChild('gateway (redis)', upstream, 'redis', logFd, options));
        const { store } = await redisTarget.child.call<{ store: string }>('info');
        if (store === 'redis') {
          targets.push(redisTarget);
          if (options.compare) targets.push(track(await startGatewayChild('gateway (before, redis)', upstream, 'redis', logFd, options, options.compare)));
        } else warnings.push(`Redis scenarios not run: with REDIS_URL set the gateway used the "${store}" store (no Redis store in this build)`);
      }
    }

    const rows = buildRows(targets, options);
    await runLoadPhase(rows, options);
    await runProbePhase(rows, upstream, options);

    for (const target of targets) if (target.kind === 'gateway') await target.child.stop();
    const held: HeldResult[] = [];
    // `--streams=0` leaves the held-streams test out (a per-stream figure of no streams means nothing).
    if (options.streams > 0) {
      log(`holding ${options.streams} streams open on fresh servers...`);
      const native = FLOORS['native-stream-5'];
      const chat = SCENARIOS.find((s) => s.id === 'chat-stream-tools')!;
      held.push(await holdStreams('forwarder, native', () => startChild('forwarder', script('forwarder'), [upstream.url]), upstream, native.request, native.completeMarker, options));
      const freshGateway = async () => (await startGatewayChild('gateway (memory)', upstream, 'memory', logFd, options)).child;
      held.push(await holdStreams('gateway (memory), native', freshGateway, upstream, native.request, native.completeMarker, options));
      held.push(await holdStreams('gateway (memory), chat', freshGateway, upstream, chat.request, chat.completeMarker, options));
      if (options.compare) {
        const before = async () => (await startGatewayChild('gateway (before)', upstream, 'memory', logFd, options, options.compare!)).child;
        held.push(await holdStreams('gateway (before), native', before, upstream, native.request, native.completeMarker, options));
      }
    }

    const report = summarize(rows, held, options);
    fs.closeSync(logFd);
    const logLines = fs.readFileSync(logFile, 'utf8').split('\n').filter((line) => line.includes('"message":"request"')).length;
    const served = rows.filter((r) => r.target.kind === 'gateway').reduce((sum, r) => sum + r.runs.reduce((s, x) => s + x.requests, 0), 0);
    log('');
    log(report.text);
    log('');
    log(`gateway request log lines written: ${logLines} (measured gateway requests: ${served}, plus warm-up, probes and held streams)`);
    if (logLines < served) problems.push(`the gateway wrote ${logLines} request log lines for ${served} measured requests`);

    if (options.out) {
      const settings = `${options.reps} x ${options.durationSec} s per scenario, ${options.connections} connections, upstream delay ${options.delayMs} ms, ${options.streams} held streams`;
      writeResultsSection(options.out, [
        `## Latest run (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC)`, '',
        describeMachineMarkdown(machine, settings, os.loadavg()[0]), '', report.markdown,
        ...(warnings.length ? ['', '### Not measured as intended in this run', '', ...warnings.map((w) => `- ${w}`)] : []),
        ...(problems.length ? ['', '### Problems in this run', '', ...problems.map((p) => `- ${p}`)] : []),
      ].join('\n'));
      log(`wrote ${path.relative(process.cwd(), options.out)}`);
    }
  } finally {
    await Promise.allSettled(children.map((child) => child.stop()));
    if (options.redis) await cleanRedis(benchRedisUrl(), REDIS_PREFIX).catch(() => undefined);
    try {
      fs.closeSync(logFd);
    } catch {
      // already closed
    }
    fs.rmSync(logFile, { force: true });
  }
  if (warnings.length) {
    log('\nNot measured as intended:');
    for (const warning of warnings) log(`  - ${warning}`);
  }
  if (problems.length) {
    log('\nProblems:');
    for (const problem of problems) log(`  - ${problem}`);
    process.exitCode = 1;
  }
}

main().then(
  // Exit once the report is out: a handle left by the load generator kept the process alive for minutes.
  () => process.exit(),
  (err) => exitWithError('bench', err),
);
