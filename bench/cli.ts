/**
 * The bench's command line: its options and usage, node:util `parseArgs`, `--help`, and mistakes reported as one line
 * with the usage, never as a stack trace.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SCENARIO_IDS, SCENARIOS } from './scenarios';

const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** A mistake on the command line: printed without a stack, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * Parse `argv` with `parseArgs` (strict: an unknown option or a missing value is a mistake).
 * `--help` or `-h` anywhere prints `usage` to stdout and exits 0 before anything is parsed.
 * @param config parseArgs' options (and `allowPositionals` where the script takes positionals)
 * @param usage the script's usage text: the command and every option, one per line
 * @throws UsageError with parseArgs' message and the usage, on an unknown option or a missing value
 */
export function parseCommandLine<T extends ParseArgsConfig>(argv: string[], config: T, usage: string): ReturnType<typeof parseArgs<T>> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage.trimEnd()}\n`);
    process.exit(0);
  }
  try {
    return parseArgs<T>({ ...config, args: argv });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${usage.trimEnd()}`);
  }
}

/**
 * The `dist` directory a `--compare=DIR` names, as an absolute path.
 * @throws UsageError when DIR holds no built bench gateway (`bench/gateway.js`)
 */
export function compareDirectory(dir: string): string {
  const resolved = path.resolve(dir);
  if (!fs.existsSync(path.join(resolved, 'bench', 'gateway.js'))) {
    throw new UsageError(`--compare: ${resolved} holds no bench/gateway.js (give the dist directory of another build)`);
  }
  return resolved;
}

/**
 * Print a failed script's error and exit: a {@link UsageError} as its message alone, with status 2;
 * anything else with its stack, with status 1.
 * @param script the script's name, first on the line (`bench`)
 */
export function exitWithError(script: string, err: unknown): never {
  if (err instanceof UsageError) {
    process.stderr.write(`${script}: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`${script} failed: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
}

/** The options of a bench run, parsed from its command line. */
export interface Options {
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
  /** Whether the peer gateways (bench/peers) run beside this one. */
  peers: boolean;
  only: RegExp | null;
  out: string | null;
  /** A `dist` directory of another build whose gateway runs side by side as "gateway (before)". */
  compare: string | null;
  /** Where the forwarder and each gateway write a V8 CPU profile of the whole run (`--cpu-prof`); null: none. */
  cpuProfDir: string | null;
}

const USAGE = `usage: npm run bench -- [options]   (or: node dist/bench/run.js [options])

  --smoke            about a second per scenario, 200 held streams, no warm-up; checks that numbers
                     come out and nothing failed (writes no results file; about a minute)
  --duration=S       seconds of each measured run (default 5; smoke 1)
  --reps=N           repeats of every run, taking turns (default 3; smoke 1)
  --connections=N    connections of the load generator (default 32; the *-300ms scenarios use 100)
  --delay-ms=N       the fake upstream answers after N ms (default 0; the *-300ms scenarios: 300)
  --streams=N        streams held open at once in the memory test (default 8000; smoke 200; 0: no test)
  --hold=S           seconds those streams are held (default 3; smoke 1)
  --no-redis         leave out the Redis store's scenarios (they use REDIS_URL when set, else a
                     redis-server the run starts on a free port) and the Redis Cluster's (a cluster
                     of 3 primaries and 3 replicas the run starts; needs redis-cli)
  --no-peers         leave out the peer gateways (the Portkey gateway, installed under bench/peers by
                     npm run bench) on the native-json and chat-json scenarios
  --only=REGEX       only the scenarios whose id matches: ${SCENARIO_IDS}
  --out=FILE         where the results section is written (default bench/RESULTS.md; - for none)
  --compare=DIR      also run the gateway built in DIR (a dist of another commit) as "gateway (before)",
                     and on Redis as "gateway (before, redis)": what a change buys, in one run
  --cpu-prof=DIR     the forwarder and each gateway write a CPU profile of the run into DIR (node
                     --cpu-prof; read with node dist/bench/profile-summary.js FILE --cpu-us=N)
  -h, --help         this text`;

/**
 * Parse `npm run bench` options (USAGE); `--help` prints USAGE and exits.
 * @throws UsageError on an unknown option, a value that is not a number, an `--only` that matches no
 *   scenario, or a `--compare` directory without a built bench gateway
 */
export function parseOptions(argv: string[]): Options {
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
      'no-peers': { type: 'boolean', default: false },
      only: { type: 'string' },
      out: { type: 'string' },
      compare: { type: 'string' },
      'cpu-prof': { type: 'string' },
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
    streams: Math.round(number(values.streams, smoke ? 200 : 8000, 'streams')),
    holdSec: number(values.hold, smoke ? 1 : 3, 'hold'),
    probeCount: smoke ? 5 : 30,
    redis: !values['no-redis'],
    peers: !values['no-peers'],
    only,
    out: out === '-' ? null : path.resolve(out),
    compare: values.compare ? compareDirectory(values.compare) : null,
    cpuProfDir: values['cpu-prof'] ? path.resolve(values['cpu-prof']) : null,
  };
}
