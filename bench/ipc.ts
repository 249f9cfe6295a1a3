/**
 * The benchmark's process plumbing. Every server (fake upstream, bare forwarder, gateway) runs in its
 * own child process so the load generator in the parent does not share their event loop; the parent
 * asks each child for its own figures (CPU time, memory, event-loop delay) over the IPC channel.
 *
 * Parent side: `startChild` forks a compiled bench script and waits for its `ready` message.
 * Child side: `serveChild` answers commands; `createProcessProbe` supplies the figures every child reports.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What a child reports about itself. CPU in microseconds, memory in bytes, loop delay in ms. */
export interface ProcessStats {
  cpuUserMicros: number;
  cpuSystemMicros: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** Largest RSS seen since the last `resetPeak` (sampled every 20 ms from then on). */
  peakRssBytes: number;
  /** Largest heap used seen since the last `resetPeak`. */
  peakHeapUsedBytes: number;
  /** Longest event-loop stall since the last `resetLoop`, in ms (perf_hooks monitorEventLoopDelay). */
  loopDelayMaxMs: number;
  /** The 99th percentile of the event loop's lag (delay past the monitor's resolution) since the last `resetLoop`, in ms. */
  loopDelayP99Ms: number;
}

type Handler = (args: any) => unknown | Promise<unknown>;

interface CommandMessage {
  id: number;
  cmd: string;
  args?: unknown;
}

interface ReplyMessage {
  id: number;
  result?: unknown;
  error?: string;
}

/** The event-loop delay monitor's sampling interval, ms. */
const LOOP_RESOLUTION_MS = 5;

/**
 * The figures every bench child reports: `stats`, `resetLoop`, `resetPeak`, `gc` (the child runs with
 * `--expose-gc`, so a memory baseline can be taken after a full collection).
 */
export function createProcessProbe(): Record<string, Handler> {
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  let peakRss = 0;
  let peakHeap = 0;
  const sample = () => {
    const memory = process.memoryUsage();
    if (memory.rss > peakRss) peakRss = memory.rss;
    if (memory.heapUsed > peakHeap) peakHeap = memory.heapUsed;
  };
  // Sampled only while the parent watches a peak (memoryUsage() reads /proc: not free under load).
  let sampler: NodeJS.Timeout | undefined;
  return {
    stats(): ProcessStats {
      sample();
      const cpu = process.cpuUsage();
      const memory = process.memoryUsage();
      return {
        cpuUserMicros: cpu.user,
        cpuSystemMicros: cpu.system,
        rssBytes: memory.rss,
        heapUsedBytes: memory.heapUsed,
        peakRssBytes: peakRss,
        peakHeapUsedBytes: peakHeap,
        loopDelayMaxMs: loop.max / 1e6,
        // The histogram holds each timer's whole interval: an idle loop reads the resolution itself.
        loopDelayP99Ms: Math.max(0, loop.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
      };
    },
    resetLoop() {
      loop.reset();
      return true;
    },
    /** Start (or restart) watching the memory peak. */
    resetPeak() {
      peakRss = 0;
      peakHeap = 0;
      sample();
      if (!sampler) sampler = setInterval(sample, 20).unref();
      return true;
    },
    gc() {
      const collect = (globalThis as { gc?: () => void }).gc;
      if (collect) {
        collect();
        collect();
      }
      return collect !== undefined;
    },
  };
}

/**
 * Child side: answer the parent's commands with `handlers` (plus the process probe) and report
 * `ready` with the port the child listens on. The child exits when the parent goes away.
 */
export function serveChild(port: number, handlers: Record<string, Handler> = {}): void {
  const all: Record<string, Handler> = { ...createProcessProbe(), ...handlers };
  process.on('message', (message: CommandMessage) => {
    const reply = (body: Omit<ReplyMessage, 'id'>) => process.send?.({ id: message.id, ...body });
    const handler = all[message.cmd];
    if (!handler) return reply({ error: `unknown command ${message.cmd}` });
    Promise.resolve()
      .then(() => handler(message.args))
      .then(
        (result) => reply({ result }),
        (err: Error) => reply({ error: err.message }),
      );
  });
  process.on('disconnect', () => process.exit(0));
  process.send?.({ ready: true, port });
}

/** Parent side: a running child server. */
export interface BenchChild {
  readonly name: string;
  readonly pid: number;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Run a command in the child; rejects with the child's error message. */
  call<T = unknown>(cmd: string, args?: unknown): Promise<T>;
  stats(): Promise<ProcessStats>;
  /** Stop the child: close the IPC channel (the child exits normally), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

export interface StartChildOptions {
  /** Extra environment on top of the parent's. */
  env?: Record<string, string | undefined>;
  /** Where the child's stdout goes: a file descriptor, or 'ignore'. Default 'ignore'. */
  stdout?: number | 'ignore';
  /** How long the child may take to report ready, ms. Default 20,000. */
  readyTimeoutMs?: number;
  /** Node flags beside `--expose-gc` (e.g. `--cpu-prof`). */
  execArgv?: string[];
}

/**
 * Fork `script` (a compiled bench child) with `args`, and resolve once it reports `ready`.
 * @throws Error when the child exits or fails to report ready in time (20 s unless `readyTimeoutMs`)
 */
export function startChild(name: string, script: string, args: string[], options: StartChildOptions = {}): Promise<BenchChild> {
  const child: ChildProcess = fork(script, args, {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', options.stdout ?? 'ignore', 'inherit', 'ipc'],
    execArgv: ['--expose-gc', ...(options.execArgv ?? [])],
  });
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  let nextId = 1;
  const pending = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${name} exited (${code ?? signal})`));
    pending.clear();
  });

  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${readyTimeoutMs / 1000} s`));
    }, readyTimeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited before it was ready (${code ?? signal})`));
    });
    child.on('message', (message: ReplyMessage & { ready?: boolean; port?: number }) => {
      if (message.ready) {
        clearTimeout(timer);
        const port = message.port!;
        const call = <T>(cmd: string, args?: unknown) =>
          new Promise<T>((resolveCall, rejectCall) => {
            const id = nextId++;
            pending.set(id, { resolve: resolveCall as (value: unknown) => void, reject: rejectCall });
            child.send({ id, cmd, args } satisfies CommandMessage);
          });
        resolve({
          name,
          pid: child.pid!,
          port,
          url: `http://127.0.0.1:${port}`,
          call,
          stats: () => call<ProcessStats>('stats'),
          async stop() {
            if (child.exitCode !== null || child.signalCode !== null) return;
            if (child.connected) child.disconnect();
            else child.kill('SIGTERM');
            const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
            await exited;
            clearTimeout(killer);
          },
        });
        return;
      }
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.error !== undefined) waiter.reject(new Error(`${name}: ${message.error}`));
      else waiter.resolve(message.result);
    });
  });
}
