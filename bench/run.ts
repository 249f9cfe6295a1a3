/**
 * `npm run bench`: the gateway side by side with a bare http-proxy forwarder, both in front of the same
 * local fake upstream, in one run. Each server is a child process; autocannon drives them from this one.
 * What it measures and the targets: docs/benchmark.md.
 *
 * Runs are interleaved (forwarder, gateway on the memory store, on the Redis store, on a Redis Cluster,
 * for one scenario, then the next scenario) and repeated; figures are medians over the repeats, and ratios are
 * taken within one repeat, so a noisy moment of the shared machine hits both sides alike.
 *
 * Options: `npm run bench -- --help` (USAGE in bench/cli.ts).
 * Exit status 1 when any request failed or a scenario produced no numbers, 2 on a mistake in the options.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exitWithError, parseOptions, type Options } from './cli';
import { startChild, type BenchChild, type ProcessStats } from './ipc';
import { checkComplete, openStreams, probe, probeTogether, rowsForRepeat, runLoad } from './measure';
import { benchKeyPrefix, openBenchRedis, openBenchRedisCluster, type BenchRedis } from './redis';
import { describeMachine, describeMachineMarkdown, fixed, writeResultsSection } from './report';
import { FLOORS, PEER_SCENARIOS, portkeyRequest, SCENARIOS, type BenchRequest, type FloorId } from './scenarios';
import { PACED_GAP_MS, summarize, type HeldResult, type MeasuredRun, type Row, type Target } from './summary';

const REPO_ROOT = path.resolve(__dirname, '..', '..');

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
  const result = await runLoad(row.target.child.url, row.request, row.connections, seconds);
  const after = await row.target.child.stats();
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0 || result.requests === 0) {
    problems.push(`${row.target.label} ${row.scenario}: ${result.requests} ok, ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  const served = Math.max(1, result.requests);
  return Object.assign(result, {
    cpu: (cpuMicros(after) - cpuMicros(before)) / served,
    loopMax: after.loopDelayMaxMs,
  });
}

const script = (name: string) => path.join(__dirname, `${name}.js`);

/**
 * How many times `text` occurs in `file`, read a megabyte at a time: a full run's request log is more
 * than the longest string Node can hold.
 */
function countOccurrences(file: string, text: string): number {
  const pattern = Buffer.from(text);
  const fd = fs.openSync(file, 'r');
  const chunk = Buffer.alloc(1024 * 1024);
  let carry = Buffer.alloc(0);
  let count = 0;
  try {
    for (let read = fs.readSync(fd, chunk); read > 0; read = fs.readSync(fd, chunk)) {
      const window = Buffer.concat([carry, chunk.subarray(0, read)]);
      let at = window.indexOf(pattern);
      let next = 0;
      while (at !== -1) {
        count += 1;
        next = at + pattern.length;
        at = window.indexOf(pattern, next);
      }
      // Bytes that may start an occurrence cut by the chunk's end (never the end of a counted one).
      carry = window.subarray(Math.max(next, window.length - pattern.length + 1));
    }
  } finally {
    fs.closeSync(fd);
  }
  return count;
}

/** Node flags that make a child write a CPU profile named after `label` into `dir` (none without a dir). */
function profileFlags(dir: string | null, label: string): string[] {
  if (!dir) return [];
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${label.replace(/[^a-z0-9]+/gi, '-').replace(/-$/, '')}.cpuprofile`];
}

/** Prefix of every Redis key this run's gateways write; removed at the end. */
const REDIS_PREFIX = benchKeyPrefix();

/**
 * A gateway child; `redis`: the run's Redis (or Redis Cluster) for the Redis store, none for the memory store.
 * A build from `dist` (`--compare`) writes under a prefix of its own inside the run's: another build may
 * lay out its keys otherwise (ef3005b refuses to start beside this one's key records).
 */
async function startGatewayChild(label: string, upstream: BenchChild, redis: BenchRedis | null, logFd: number, dist?: string, cpuProfDir: string | null = null): Promise<Target> {
  const file = dist ? path.join(dist, 'bench', 'gateway.js') : script('gateway');
  const prefix = dist ? `${REDIS_PREFIX}before:` : REDIS_PREFIX;
  const child = await startChild(label, file, [upstream.url, redis ? (redis.cluster ? 'cluster' : 'redis') : 'memory'], {
    stdout: logFd,
    execArgv: profileFlags(cpuProfDir, label),
    env: redis?.cluster ? { BENCH_KEY_PREFIX: prefix, REDIS_CLUSTER_NODES: redis.url } : { BENCH_KEY_PREFIX: prefix, REDIS_URL: redis?.url },
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
      loopP99Held: held.loopDelayP99Ms,
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
  const empty = () => ({ runs: [], ratios: [], addedP50: [], ownCpu: [] });
  // Order: each floor, then every gateway scenario compared with it, so comparisons are measured together.
  for (const floor of floorsUsed) {
    const { title, request, connections = options.connections } = FLOORS[floor];
    for (const target of targets.filter((t) => servesFloor(t))) {
      rows.push({ target, scenario: floor, title, floor, request, connections, ...empty() });
    }
    for (const scenario of gatewayScenarios.filter((s) => s.floor === floor)) {
      const connections = scenario.connections ?? options.connections;
      for (const target of targets.filter((t) => t.kind === 'gateway')) {
        rows.push({ target, scenario: scenario.id, title: scenario.title, floor, request: scenario.request, connections, ...empty() });
      }
      if (!PEER_SCENARIOS.has(scenario.id)) continue;
      for (const target of targets.filter((t) => t.kind === 'peer')) {
        rows.push({ target, scenario: scenario.id, title: scenario.title, floor, request: target.request!(scenario.request), connections, ...empty() });
      }
    }
  }
  return rows;
}

/** Whether a target is sent the forwarder's native requests (the forwarder, the Express floor), not the scenarios'. */
function servesFloor(target: Target): boolean {
  return target.kind === 'forwarder' || target.kind === 'floor';
}

function markerOf(row: Row): string {
  return servesFloor(row.target) ? FLOORS[row.floor].completeMarker : SCENARIOS.find((s) => s.id === row.scenario)!.completeMarker;
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
    for (const row of rows) await runLoad(row.target.child.url, row.request, row.connections, options.warmupSec);
  }
  const labelWidth = Math.max(...rows.map((row) => row.target.label.length));
  for (let rep = 0; rep < options.reps; rep++) {
    log(`repeat ${rep + 1}/${options.reps}`);
    const floorOfRep = new Map<FloorId, MeasuredRun>();
    for (const row of rowsForRepeat(rows, rep)) {
      const result = await measure(row, options, options.durationSec);
      row.runs.push(result);
      if (row.target.kind === 'forwarder') floorOfRep.set(row.floor, result);
      const floor = floorOfRep.get(row.floor);
      if (floor) {
        row.ratios.push(result.rps / floor.rps);
        row.ownCpu.push(result.cpu - floor.cpu);
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
      // 200 deltas x the gap: too slow to probe, same path as 5 deltas; the delayed scenarios' probe would be their delay.
      if (row.scenario.includes('200') || row.scenario.endsWith('300ms')) continue;
      const stream = servesFloor(row.target) ? FLOORS[row.floor].stream : SCENARIOS.find((s) => s.id === row.scenario)!.stream;
      if (row.scenario === 'chat-stream-tools') {
        [row.probe, row.nativeProbe] = await probeTogether(row.target.child.url, [row.request, FLOORS['native-stream-tools'].request], options.probeCount);
      } else if (stream) row.probe = await probe(row.target.child.url, row.request, options.probeCount);
    }
  } finally {
    await upstream.call('mode', { name: 'burst', delayMs: options.delayMs });
  }
  for (const row of rows) {
    if (!row.probe && !row.scenario.includes('stream') && !row.scenario.endsWith('300ms')) row.probe = await probe(row.target.child.url, row.request, options.probeCount);
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const machine = describeMachine(REPO_ROOT);
  log(`model-gateway bench${options.smoke ? ' (smoke)' : ''}: ${machine.cpus} CPUs, ${machine.cpuModel}, Node ${machine.node}, load average ${machine.loadAverage}`);
  const logFile = path.join(os.tmpdir(), `gateway-bench-${process.pid}.log`);
  const logFd = fs.openSync(logFile, 'w');
  const children: BenchChild[] = [];
  let redis: BenchRedis | null = null;
  let cluster: BenchRedis | null = null;
  const track = <T extends BenchChild | Target>(x: T): T => {
    children.push('child' in x ? x.child : x);
    return x;
  };
  try {
    const upstream = track(await startChild('upstream', script('upstream'), []));
    await upstream.call('mode', { name: 'burst', delayMs: options.delayMs });
    const targets: Target[] = [
      { label: 'forwarder', kind: 'forwarder', child: track(await startChild('forwarder', script('forwarder'), [upstream.url], { execArgv: profileFlags(options.cpuProfDir, 'forwarder') })) },
      { label: 'express floor', kind: 'floor', child: track(await startChild('express floor', script('express-floor'), [upstream.url], { execArgv: profileFlags(options.cpuProfDir, 'express floor') })) },
      track(await startGatewayChild('gateway (memory)', upstream, null, logFd, undefined, options.cpuProfDir)),
    ];
    if (options.compare) targets.push(track(await startGatewayChild('gateway (before)', upstream, null, logFd, options.compare, options.cpuProfDir)));
    if (options.peers) {
      const portkey = await startChild('Portkey gateway', script('portkey'), [], { execArgv: profileFlags(options.cpuProfDir, 'portkey') }).catch((err: Error) => err);
      if (portkey instanceof Error) warnings.push(`Portkey gateway not run: ${portkey.message} (run with --no-peers to leave it out)`);
      else targets.push({ label: 'Portkey gateway', kind: 'peer', child: track(portkey), request: (request) => portkeyRequest(request, upstream.url) });
    }
    if (options.redis) {
      const opened = await openBenchRedis(REDIS_PREFIX);
      if ('why' in opened) {
        warnings.push(`Redis scenarios not run: ${opened.why} (run with --no-redis to leave them out)`);
      } else {
        redis = opened;
        log(`Redis store: ${redis.url} (${redis.source})`);
        const redisTarget = track(await startGatewayChild('gateway (redis)', upstream, redis, logFd));
        const { store } = await redisTarget.child.call<{ store: string }>('info');
        if (store === 'redis') {
          targets.push(redisTarget);
          if (options.compare) targets.push(track(await startGatewayChild('gateway (before, redis)', upstream, redis, logFd, options.compare)));
        } else warnings.push(`Redis scenarios not run: with REDIS_URL set the gateway used the "${store}" store (no Redis store in this build)`);
      }
      // The cluster store: this build only (an older build need not know REDIS_CLUSTER_NODES).
      const openedCluster = await openBenchRedisCluster();
      if ('why' in openedCluster) {
        warnings.push(`Redis Cluster scenarios not run: ${openedCluster.why} (run with --no-redis to leave them out)`);
      } else {
        cluster = openedCluster;
        log(`Redis Cluster store: ${cluster.source}`);
        targets.push(track(await startGatewayChild('gateway (redis cluster)', upstream, cluster, logFd)));
      }
    }

    const rows = buildRows(targets, options);
    await runLoadPhase(rows, options);
    await runProbePhase(rows, upstream, options);

    for (const target of targets) if (target.kind === 'gateway' || target.kind === 'peer') await target.child.stop();
    const held: HeldResult[] = [];
    // `--streams=0` leaves the held-streams test out (a per-stream figure of no streams means nothing).
    if (options.streams > 0) {
      log(`holding ${options.streams} streams open on fresh servers...`);
      const native = FLOORS['native-stream-5'];
      const chat = SCENARIOS.find((s) => s.id === 'chat-stream-tools')!;
      held.push(await holdStreams('forwarder, native', () => startChild('forwarder', script('forwarder'), [upstream.url]), upstream, native.request, native.completeMarker, options));
      const freshGateway = async () => (await startGatewayChild('gateway (memory)', upstream, null, logFd)).child;
      held.push(await holdStreams('gateway (memory), native', freshGateway, upstream, native.request, native.completeMarker, options));
      held.push(await holdStreams('gateway (memory), chat', freshGateway, upstream, chat.request, chat.completeMarker, options));
      if (options.compare) {
        const before = async () => (await startGatewayChild('gateway (before)', upstream, null, logFd, options.compare!)).child;
        held.push(await holdStreams('gateway (before), native', before, upstream, native.request, native.completeMarker, options));
      }
    }

    const report = summarize(rows, held, options);
    fs.closeSync(logFd);
    const logLines = countOccurrences(logFile, '"message":"request"');
    const served = rows.filter((r) => r.target.kind === 'gateway').reduce((sum, r) => sum + r.runs.reduce((s, x) => s + x.requests, 0), 0);
    log('');
    log(report.text);
    log('');
    log(`gateway request log lines written: ${logLines} (measured gateway requests: ${served}, plus warm-up, probes and held streams)`);
    if (logLines < served) problems.push(`the gateway wrote ${logLines} request log lines for ${served} measured requests`);

    if (options.out) {
      const settings = `${options.reps} x ${options.durationSec} s per scenario, ${options.connections} connections unless the scenario says otherwise, upstream delay ${options.delayMs} ms unless the scenario says otherwise, ${options.streams} held streams` +
        (redis ? `, Redis store on ${redis.source}` : '') + (cluster ? `, Redis Cluster store on ${cluster.source}` : '');
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
    await redis?.close();
    await cluster?.close();
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
