/**
 * Summarize a V8 `.cpuprofile` (written by `node --cpu-prof`, e.g. `npm run bench -- --profile`):
 * self time by function and by package, and total (inclusive) time of the gateway's own functions.
 *
 * Usage: node dist/bench/profile-summary.js <file.cpuprofile> [top=25]
 */
import fs from 'node:fs';
import { exitWithError, parseCommandLine, UsageError } from './cli';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** `express`, `node:http` (node internals), `gateway` (this repo's code), or `(program)`-like V8 entries. */
function packageOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (match) return match[1];
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  if (/\/dist\/(lib|middleware|translators)\//.test(url)) return 'gateway';
  if (/\/dist\/bench\//.test(url)) return 'bench';
  return url;
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url ? `${url.replace(/^.*\/(node_modules|dist)\//, '$1/').replace(/^file:\/\//, '')}:${lineNumber + 1}` : '';
  return `${functionName || '(anonymous)'} ${where}`.trim();
}

const USAGE = `usage: node dist/bench/profile-summary.js <file.cpuprofile> [top]

  file.cpuprofile    a profile written by node --cpu-prof (npm run bench -- --profile writes them to bench/profiles/)
  top                how many functions each list shows (default 25)
  -h, --help         this text`;

function main(): void {
  const { positionals } = parseCommandLine(process.argv.slice(2), { options: {}, allowPositionals: true }, USAGE);
  const [file, topArg] = positionals;
  if (!file || positionals.length > 2) throw new UsageError(USAGE);
  const top = Number(topArg ?? 25);
  if (!Number.isInteger(top) || top < 1) throw new UsageError(`top: "${topArg}" is not a positive whole number`);
  let profile: CpuProfile;
  try {
    profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  } catch (err) {
    throw new UsageError(`${file}: ${(err as Error).message}`);
  }
  if (!Array.isArray(profile.nodes) || !Array.isArray(profile.samples)) throw new UsageError(`${file}: not a .cpuprofile (no nodes and samples)`);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self.entries()].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;

  const selfByLabel = new Map<string, number>();
  const selfByPackage = new Map<string, number>();
  const inclusiveGateway = new Map<string, number>();
  for (const [id, time] of self) {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') continue;
    selfByLabel.set(label(node), (selfByLabel.get(label(node)) ?? 0) + time);
    const pkg = packageOf(node.callFrame.url, node.callFrame.functionName);
    selfByPackage.set(pkg, (selfByPackage.get(pkg) ?? 0) + time);
    // Inclusive time of this repo's functions: charge each distinct gateway frame on the stack once.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!;
      if (packageOf(frame.callFrame.url, frame.callFrame.functionName) !== 'gateway') continue;
      const name = label(frame);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusiveGateway.set(name, (inclusiveGateway.get(name) ?? 0) + time);
    }
  }
  const pct = (t: number) => `${((100 * t) / busy).toFixed(1).padStart(5)}%`;
  const print = (title: string, entries: Map<string, number>, n: number) => {
    process.stdout.write(`\n${title}\n`);
    for (const [name, time] of [...entries.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)) process.stdout.write(`  ${pct(time)}  ${name}\n`);
  };
  process.stdout.write(`${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy (percentages are of busy time)\n`);
  print('Self time by package', selfByPackage, 20);
  print('Self time by function', selfByLabel, top);
  print("Inclusive time of the gateway's own functions", inclusiveGateway, top);
}

try {
  main();
} catch (err) {
  exitWithError('profile-summary', err);
}
