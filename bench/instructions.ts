/**
 * `npm run bench:instructions`: the instructions each server executes per request, counted by
 * valgrind's callgrind, side by side for the bare forwarder, the design floor and the gateway (and,
 * with --compare=DIR, the gateway built in DIR). Instruction counts do not depend on what else the
 * machine is doing, so a change of a few per cent shows here where `npm run bench`'s CPU times, on a
 * shared machine, move by 10 to 30 % from one run to the next. They leave out what the kernel does
 * (socket writes and the wake-ups of the peer processes), which `npm run bench` includes.
 *
 * Method: each server runs under `valgrind --tool=callgrind` with instrumentation off until it has
 * been warmed (`--warmup` requests at `--connections`), then counts `--requests` requests per repeat,
 * the servers taking turns. A figure is user-space instructions per request, all threads (the
 * collector's included), and the same without V8's compilers (TurboFan and the bytecode generator:
 * still at work after a warm-up under valgrind, and the noisiest part of a count). Node runs with
 * `--no-flush-bytecode --no-memory-reducer`, so a server idle while the others run keeps its code and
 * heap (under valgrind, an idle server otherwise lost its compiled code and counted its recompilation
 * in the next repeat).
 *
 * Options: `npm run bench:instructions -- --help` (USAGE below).
 * Needs valgrind (callgrind, callgrind_control, callgrind_annotate). A run of the defaults takes
 * about 5 minutes. Exit status 1 when a request failed, 2 when valgrind is missing or on a mistake in the options.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { compareDirectory, exitWithError, parseCommandLine, UsageError } from './cli';
import { startChild, type BenchChild } from './ipc';
import { checkComplete, median, runRequests } from './measure';
import { benchKeyPrefix, benchRedisUrl, cleanRedis, redisReachable } from './redis';
import { fixed, formatTextTable } from './report';
import { FLOORS, SCENARIO_IDS, SCENARIOS, type BenchRequest, type ScenarioId } from './scenarios';

const run = promisify(execFile);

/** Functions of V8's compilers in callgrind's output (left out of the "without compilers" figure). */
const COMPILER_FUNCTION = /v8::internal::(compiler|maglev|baseline|interpreter|turboshaft)::|v8::internal::Compiler::|OptimizedCompilationJob/;

/** Node flags of every counted server (see the module comment). */
const NODE_FLAGS = ['--no-flush-bytecode', '--no-memory-reducer'];

interface Target {
  label: string;
  script: string;
  args: string[];
  request: BenchRequest;
  marker: string;
  /** Where callgrind writes this server's dumps. */
  dir: string;
  child?: BenchChild;
  /** Instructions per request, per repeat: all, and without the compilers. */
  all: number[];
  withoutCompilers: number[];
}

/** Instructions of one callgrind dump: the total and what V8's compilers executed. */
export interface DumpCounts {
  total: number;
  compilers: number;
}

/**
 * Read a `callgrind_annotate --threshold=100` listing (one line per function, self instructions
 * first): the program total and the sum over compiler functions.
 * @throws Error when the listing has no `PROGRAM TOTALS` line
 */
export function countDump(listing: string): DumpCounts {
  let total: number | undefined;
  let compilers = 0;
  for (const line of listing.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (!match) continue;
    const count = Number(match[1].replaceAll(',', ''));
    if (match[2].includes('PROGRAM TOTALS')) total = count;
    else if (COMPILER_FUNCTION.test(match[2])) compilers += count;
  }
  if (total === undefined) throw new Error('callgrind_annotate listing without PROGRAM TOTALS');
  return { total, compilers };
}

/** The newest dump callgrind wrote in `dir` (files `callgrind.out.<pid>.<n>`), once it is complete. */
async function newestDump(dir: string, after: Set<string>): Promise<string> {
  for (let waited = 0; waited < 60_000; waited += 100) {
    const fresh = fs.readdirSync(dir).filter((name) => /\.\d+$/.test(name) && !after.has(name));
    if (fresh.length > 0) {
      const file = path.join(dir, fresh.sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop())).pop()!);
      // callgrind writes the totals at the end of a dump.
      if (fs.readFileSync(file, 'utf8').includes('\ntotals:')) return file;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no callgrind dump appeared in ${dir}`);
}

/** Whether valgrind and callgrind's tools can be run (callgrind_annotate exits 255 after printing its version). */
function hasValgrind(): boolean {
  return ['valgrind', 'callgrind_control', 'callgrind_annotate'].every((command) => spawnSync(command, ['--version'], { stdio: 'ignore' }).error === undefined);
}

const USAGE = `usage: npm run bench:instructions -- [options]   (or: node dist/bench/instructions.js [options])

  --scenario=ID      the scenario counted (default native-json): ${SCENARIO_IDS}
  --requests=N       requests counted per server and repeat (default 2500)
  --warmup=N         requests each server gets before counting starts (default 5000)
  --reps=N           repeats, the servers taking turns (default 3)
  --connections=N    connections of the load generator (default 32)
  --compare=DIR      also count the gateway built in DIR (a dist of another commit) as "gateway (before)"
  --store=KIND       the gateways' store: memory (default) or redis (REDIS_URL or the local server,
                     under a key prefix of the run's own, removed at the end)
  -h, --help         this text`;

async function main(): Promise<void> {
  const { values } = parseCommandLine(process.argv.slice(2), {
    options: {
      scenario: { type: 'string', default: 'native-json' },
      requests: { type: 'string', default: '2500' },
      warmup: { type: 'string', default: '5000' },
      reps: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      compare: { type: 'string' },
      store: { type: 'string', default: 'memory' },
    },
  }, USAGE);
  const count = (name: keyof typeof values) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name}: "${values[name]}" is not a positive whole number`);
    return n;
  };
  const requests = count('requests');
  const warmup = count('warmup');
  const reps = count('reps');
  const connections = count('connections');
  const scenario = SCENARIOS.find((s) => s.id === (values.scenario as ScenarioId));
  if (!scenario) throw new UsageError(`--scenario: one of ${SCENARIO_IDS}`);
  const compare = values.compare ? compareDirectory(values.compare) : null;
  const store = values.store!;
  if (store !== 'memory' && store !== 'redis') throw new UsageError(`--store: "${store}" is not memory or redis`);
  const redisUrl = benchRedisUrl();
  if (store === 'redis' && !(await redisReachable(redisUrl))) throw new Error(`--store=redis: no Redis server at ${redisUrl}`);
  const keyPrefix = benchKeyPrefix();
  if (!hasValgrind()) {
    process.stderr.write('bench:instructions needs valgrind (apt-get install -y valgrind)\n');
    process.exit(2);
  }

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-instructions-'));
  const script = (dist: string, name: string) => path.join(dist, 'bench', `${name}.js`);
  const here = path.resolve(__dirname, '..');
  const floor = FLOORS[scenario.floor];
  const upstream = await startChild('upstream', script(here, 'upstream'), []);
  const target = (label: string, file: string, args: string[], request: BenchRequest, marker: string): Target => {
    const dir = path.join(work, label.replace(/\W+/g, '-'));
    fs.mkdirSync(dir);
    return { label, script: file, args, request, marker, dir, all: [], withoutCompilers: [] };
  };
  // As `npm run bench` names them: "gateway (redis)", "gateway (before, redis)".
  const gatewayLabel = (before: boolean) => {
    const notes = [before ? 'before' : '', store === 'redis' ? 'redis' : ''].filter(Boolean);
    return notes.length > 0 ? `gateway (${notes.join(', ')})` : 'gateway';
  };
  const targets = [target('forwarder', script(here, 'forwarder'), [upstream.url], floor.request, floor.completeMarker)];
  if (scenario.id === 'native-json') targets.push(target('design floor', script(here, 'design-floor'), [upstream.url], floor.request, floor.completeMarker));
  targets.push(target(gatewayLabel(false), script(here, 'gateway'), [upstream.url, store], scenario.request, scenario.completeMarker));
  if (compare) {
    targets.push(target(gatewayLabel(true), script(compare, 'gateway'), [upstream.url, store], scenario.request, scenario.completeMarker));
  }

  const failures: string[] = [];
  const load = async (t: Target, amount: number) => {
    const result = await runRequests(t.child!.url, t.request, connections, amount);
    const failed = result.non2xx + result.errors + result.timeouts;
    if (failed > 0) failures.push(`${t.label}: ${failed} of ${amount} requests failed`);
  };
  const control = (t: Target, ...args: string[]) => run('callgrind_control', [...args, String(t.child!.pid)]);
  try {
    for (const t of targets) {
      t.child = await startChild(t.label, t.script, t.args, {
        wrapper: ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${path.join(t.dir, 'callgrind.out.%p')}`, '-q'],
        execArgv: NODE_FLAGS,
        readyTimeoutMs: 120_000,
        env: { BENCH_KEY_PREFIX: keyPrefix },
      });
      await checkComplete(t.child.url, t.request, t.marker);
      process.stdout.write(`${t.label}: warming up (${warmup} requests)...\n`);
      await load(t, warmup);
      await control(t, '--instr=on');
      await load(t, 200);
    }
    const labelWidth = Math.max(...targets.map((t) => t.label.length));
    for (let rep = 0; rep < reps; rep++) {
      // The servers take turns at going first (see rowsForRepeat in bench/measure.ts).
      const order = targets.map((_, i) => targets[(i + rep) % targets.length]);
      for (const t of order) {
        await control(t, '--zero');
        await load(t, requests);
        const before = new Set(fs.readdirSync(t.dir));
        await control(t, '--dump');
        const dump = await newestDump(t.dir, before);
        const { stdout } = await run('callgrind_annotate', ['--threshold=100', dump], { maxBuffer: 256 * 1024 * 1024 });
        const counts = countDump(stdout);
        fs.rmSync(dump);
        t.all.push(counts.total / requests);
        t.withoutCompilers.push((counts.total - counts.compilers) / requests);
        process.stdout.write(`  repeat ${rep + 1}/${reps} ${t.label.padEnd(labelWidth)} ${fixed(counts.total / requests / 1000, 1).padStart(7)} kIr/req, ${fixed((counts.total - counts.compilers) / requests / 1000, 1).padStart(7)} without compilers\n`);
      }
    }
  } finally {
    await Promise.all(targets.map((t) => t.child?.stop()));
    await upstream.stop();
    fs.rmSync(work, { recursive: true, force: true });
    if (store === 'redis') await cleanRedis(redisUrl, keyPrefix).catch(() => undefined);
  }

  const forwarder = median(targets[0].withoutCompilers);
  const rows = targets.map((t) => [
    t.label,
    fixed(median(t.all) / 1000, 1),
    fixed(median(t.withoutCompilers) / 1000, 1),
    fixed(forwarder / median(t.withoutCompilers), 2),
    t.withoutCompilers.map((n) => fixed(n / 1000, 1)).join(' '),
  ]);
  process.stdout.write(`\n${scenario.title}, ${requests} requests x ${reps} repeats at ${connections} connections, after ${warmup} to warm up\n`);
  process.stdout.write('kIr/req: thousands of user-space instructions per request (median of the repeats); x forwarder: the forwarder\'s figure without compilers over the server\'s\n');
  process.stdout.write(`${formatTextTable([['server', 'kIr/req', 'kIr/req without compilers', 'x forwarder', 'repeats (without compilers)'], ...rows])}\n`);
  if (failures.length > 0) {
    process.stderr.write(`failed requests:\n${failures.join('\n')}\n`);
    process.exitCode = 1;
  }
}

if (require.main === module) {
  main().catch((err) => exitWithError('bench:instructions', err));
}
