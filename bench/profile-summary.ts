/**
 * Where a bench child's CPU went, by pipeline step: reads a V8 CPU profile (`.cpuprofile`, written by
 * `npm run bench -- --cpu-prof=DIR`, or any `node --cpu-prof` run of a gateway) and gives each sample
 * to the step whose code is deepest on its stack.
 *
 * Usage: node dist/bench/profile-summary.js <file.cpuprofile> [--cpu-us=N] [--top=N]
 *   --cpu-us=N  the run's measured CPU µs per request (the bench's "CPU µs/req"): each step's share of
 *               the busy samples is also printed in µs per request.
 *   --top=N     also the N functions with the most self time, with their step.
 *
 * A sample is given to the first frame, walking from the leaf to the root, that is the gateway's own
 * code (dist/lib, dist/middleware, dist/translators: the step of its file, STEPS; shared helpers such
 * as lib/keys or lib/context count for their caller's step) or Express's router (routing between the
 * steps). Library and Node frames below a gateway frame count for that frame's step (http-proxy under
 * the native proxy is its reply), except the logger's (winston: the log line, whoever logs). A sample with no gateway frame, run from a callback or a tick, goes
 * by its first known library or Node frame (LIBRARIES: body-parser's read is the body step, the HTTP
 * client's request flush the upstream send); the rest is Node's HTTP
 * server, sockets, timers and GC. Idle samples are left out, and so is module loading at start-up
 * (its own row), so a short run's figures are not spread over the steps.
 * Profile format: https://chromedevtools.github.io/devtools-protocol/tot/Profiler/#type-Profile
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const LOG = 'log line';

/** Steps in pipeline order: the files (under dist/, without `.js`) whose frames count for each. */
export const STEPS: ReadonlyArray<{ step: string; files: RegExp }> = [
  { step: 'request context (request id), host check', files: /^(middleware\/(request-context|host-check)|lib\/(observability\/)?session-id)$/ },
  { step: 'auth', files: /^(middleware\/auth|lib\/(config\/)?key-groups|lib\/(keys\/)?development-key)$/ },
  { step: 'body (read, parse, validate)', files: /^(middleware\/(json-body|validate-body|version-header)|lib\/(http\/)?(json-duplicates|body-rate)|lib\/config\/(?!key-groups|catalogue).*)$/ },
  { step: 'model checks (alias, key group, whitelist)', files: /^(middleware\/(resolve-alias|model-access|key-group-dispatch|file-access|kept-thinking)|lib\/(config\/)?catalogue)$/ },
  { step: 'memory store state file (periodic write)', files: /^lib\/store\/memory-persistence$/ },
  { step: 'admission (rate limit, credit hold)', files: /^(middleware\/(rate-limit|credit-reservation|worst-case|measured-input)|lib\/billing\/(worst-case|input-bound)|lib\/store\/.*)$/ },
  { step: 'upstream send', files: /^lib\/upstream\/(client|attempt|attempt-chain|target.*|request-headers|credentials|pool|retry-policy|options|index)$/ },
  { step: 'reply (relay or convert, SSE)', files: /^(lib\/upstream\/(exchange|stream|reply)|lib\/(http\/)?(sse|tool-loop-thinking)|routes\/.*|middleware\/(native-proxy|chat-completions|chat-passthrough|native-via-chat-upstream|responses|previous-response)|translators\/.*)$/ },
  { step: 'settlement, metrics, hooks', files: /^(lib\/(billing\/)?(settlement|pricing|usage-sanity)|lib\/(pipeline\/)?(after-response|hooks)|lib\/(observability\/)?(metrics|request-log|trace-.*|tracing)|lib\/(http\/)?in-flight|lib\/alerts\/.*)$/ },
  { step: LOG, files: /^lib\/(observability\/)?logger$/ },
  { step: 'express app, error handler', files: /^(lib\/(app|http-server|routes)|lib\/http\/http-server|lib\/pipeline\/route-table|middleware\/.*)$/ },
];

/** The logger's libraries: what runs under them is the log line, whoever called the logger. */
const LOGGER = /\/node_modules\/(winston|winston-transport|logform|triple-beam)\//;

/** Shared helpers: a frame of these counts for the step of the gateway frame that called it. */
const HELPERS = /^lib\/(keys|context|errors|json-reply|read-body|loopback|keys\/secrets|pipeline\/context|http\/(errors|json-reply|read-body|loopback|turn))$/;

/** For a sample with no gateway frame: the step of its first library or Node frame (URL and function). */
const LIBRARIES: ReadonlyArray<{ step: string; url: RegExp; fn?: RegExp }> = [
  { step: 'body (read, parse, validate)', url: /\/node_modules\/(body-parser|raw-body)\// },
  { step: 'admission (rate limit, credit hold)', url: /\/node_modules\/express-rate-limit\// },
  { step: 'upstream send', url: /^node:_http_(client|agent)$/, fn: /^(onSocketNT|ClientRequest|addRequest|createConnection)/ },
  { step: 'reply (relay or convert, SSE)', url: /\/node_modules\/(http-proxy|eventsource-parser)\// },
];

const ROUTING = 'express routing between steps';
const NODE = 'node HTTP server, sockets, timers, GC (no gateway frame)';
const STARTUP = 'start-up (module loading)';

/** The dist-relative module of a frame's URL (`lib/upstream/client`), or null outside the gateway's code. */
function gatewayModule(url: string): string | null {
  if (url.includes('/node_modules/')) return null;
  const match = /\/dist\/((?:lib|middleware|routes|translators)\/.+)\.js$/.exec(url);
  return match ? match[1] : null;
}

/** The step of one stack (leaf first), by the rules in the module comment. */
function stepOf(stack: ProfileNode[]): string {
  if (stack.some((node) => node.callFrame.functionName === 'Module._compile' || node.callFrame.functionName === 'compileForInternalLoader')) return STARTUP;
  let fallback: string | undefined;
  for (const { callFrame } of stack) {
    const { url, functionName } = callFrame;
    if (/\/node_modules\/(express|router)\//.test(url)) return ROUTING;
    if (LOGGER.test(url)) return LOG;
    const module = gatewayModule(url);
    if (module && !HELPERS.test(module)) return STEPS.find((entry) => entry.files.test(module))?.step ?? `other: ${module}`;
    fallback ??= LIBRARIES.find((rule) => rule.url.test(url) && (!rule.fn || rule.fn.test(functionName)))?.step;
  }
  return fallback ?? NODE;
}

/**
 * Microseconds of busy CPU by step in one profile.
 * @returns the steps with their sampled µs (idle and the profiler's own `(program)` root left out), and the busy total
 */
export function summarizeProfile(profile: CpuProfile): { byStep: Map<string, number>; busyMicros: number; byFunction: Map<string, { micros: number; step: string }> } {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const stepOfNode = new Map<number, string>();
  const byStep = new Map<string, number>();
  const byFunction = new Map<string, { micros: number; step: string }>();
  let busyMicros = 0;
  profile.samples.forEach((id, i) => {
    const leaf = nodes.get(id)!;
    const name = leaf.callFrame.functionName;
    if (name === '(idle)' || name === '(program)' || name === '(root)') return;
    let step = stepOfNode.get(id);
    if (step === undefined) {
      const stack: ProfileNode[] = [];
      for (let node: ProfileNode | undefined = leaf; node; node = parent.get(node.id)) stack.push(node);
      step = name === '(garbage collector)' ? NODE : stepOf(stack);
      stepOfNode.set(id, step);
    }
    const micros = profile.timeDeltas[i] ?? 0;
    byStep.set(step, (byStep.get(step) ?? 0) + micros);
    busyMicros += micros;
    const where = `${name || '(anonymous)'} ${leaf.callFrame.url.replace(/^.*\/(node_modules|dist)\//, '')}`;
    const entry = byFunction.get(`${where}\n${step}`) ?? { micros: 0, step };
    entry.micros += micros;
    byFunction.set(`${where}\n${step}`, entry);
  });
  return { byStep, busyMicros, byFunction };
}

function main(): void {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'cpu-us': { type: 'string' }, top: { type: 'string' } } });
  if (positionals.length !== 1) throw new Error('usage: profile-summary.js <file.cpuprofile> [--cpu-us=N] [--top=N]');
  const cpuUs = values['cpu-us'] === undefined ? null : Number(values['cpu-us']);
  const { byStep, busyMicros, byFunction } = summarizeProfile(JSON.parse(fs.readFileSync(positionals[0], 'utf8')) as CpuProfile);
  const startup = byStep.get(STARTUP) ?? 0;
  const served = busyMicros - startup;
  const order = [...STEPS.map((entry) => entry.step), ROUTING, NODE];
  const rows = [...byStep.keys()].filter((step) => step !== STARTUP).sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  process.stdout.write(`| step | share of busy CPU |${cpuUs === null ? '' : ' µs/request |'}\n| --- | ---: |${cpuUs === null ? '' : ' ---: |'}\n`);
  for (const step of rows) {
    const share = byStep.get(step)! / served;
    process.stdout.write(`| ${step} | ${(share * 100).toFixed(1)} % |${cpuUs === null ? '' : ` ${Math.round(share * cpuUs)} |`}\n`);
  }
  process.stdout.write(`(busy ${(served / 1000).toFixed(0)} ms sampled; start-up ${(startup / 1000).toFixed(0)} ms left out)\n`);
  const top = Number(values.top ?? 0);
  const heaviest = [...byFunction].filter(([, entry]) => entry.step !== STARTUP).sort((a, b) => b[1].micros - a[1].micros).slice(0, top);
  for (const [key, entry] of heaviest) {
    const where = key.split('\n')[0];
    const share = entry.micros / served;
    process.stdout.write(`${(share * 100).toFixed(1).padStart(5)} %${cpuUs === null ? '' : ` ${(share * cpuUs).toFixed(1).padStart(6)} µs`}  ${where}  [${entry.step}]\n`);
  }
}

if (require.main === module) main();
