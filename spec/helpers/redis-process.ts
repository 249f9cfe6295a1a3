/**
 * `redis-server` processes for tests that need a Redis other than the run's own (spec/setup.ts): the
 * nodes of a cluster (spec/helpers/redis-cluster.ts), a TLS server (spec/helpers/redis-tls.ts).
 *
 * - Every process started here listens on 127.0.0.1 only, on ports the caller chose (free loopback
 *   ports, spec/helpers/ports.ts); nothing here ever talks to a Redis on the default port 6379.
 * - A process still running when the test process exits (a crash, a test that never reached its
 *   `after` hook, mocha's `exit: true`) is killed with SIGKILL by an `exit` hook.
 * - A missing binary fails at once with one line naming the Debian package to install.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The Debian package each binary these helpers run comes from. */
export const DEBIAN_PACKAGE: Record<string, string> = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  openssl: 'openssl',
};

/**
 * Stop at once when `command` is not an executable file in a `PATH` directory.
 * @param purpose what needs it, for the message ("the Redis cluster tests")
 * @throws Error with one line: `<purpose> need <command>: apt-get install <package>`
 */
export function requireCommand(command: string, purpose: string): void {
  const found = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean).some((dir) => {
    try {
      fs.accessSync(path.join(dir, command), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!found) throw new Error(`${purpose} need ${command}: apt-get install ${DEBIAN_PACKAGE[command] ?? command}`);
}

/** A `redis-server` started by {@link startRedisServer}. */
export interface RedisServerProcess {
  /** The child process (its pid, `exitCode`, `signalCode`). */
  readonly child: ChildProcess;
  /** Whether it is still running. */
  readonly running: boolean;
  /** The last 16 KiB of what it wrote to stdout and stderr (its log). */
  output(): string;
  /**
   * Send `signal` (default SIGKILL) and wait until it has exited. Resolves at once when it already has.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kill, synchronously, whatever these helpers started and is still running (the process's `exit` event). */
function killAllOnExit(): void {
  for (const child of running) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
}

const OUTPUT_LIMIT = 16 * 1024;

/**
 * Start `redis-server` with `args` (command-line directives such as `--port 1234`, no shell) and wait
 * until it logs "Ready to accept connections". Its output keeps draining into a bounded buffer.
 * @param args the directives; the caller binds it to 127.0.0.1 and picks its ports
 * @param options.cwd its working directory (where relative file names in `args` resolve)
 * @param options.readyTimeoutMs how long to wait for it to be ready (default 10 s)
 * @returns the running process
 * @throws Error with the server's output when it exits first (a bad directive: e.g. `--tls-port` on a
 *   build without TLS) or is not ready in time; the process is killed then
 */
export async function startRedisServer(
  args: string[],
  options: { cwd?: string; readyTimeoutMs?: number } = {},
): Promise<RedisServerProcess> {
  requireCommand('redis-server', 'these tests');
  if (!exitHookInstalled) {
    process.once('exit', killAllOnExit);
    exitHookInstalled = true;
  }
  const child = spawn('redis-server', args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let log = '';
  const append = (chunk: Buffer) => {
    log += chunk.toString();
    if (log.length > OUTPUT_LIMIT) log = log.slice(-OUTPUT_LIMIT);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  // Settles on exit, or on a spawn failure (no exit event follows one).
  const exited = new Promise<void>((resolve) => {
    const done = () => {
      running.delete(child);
      resolve();
    };
    child.once('exit', done);
    child.once('error', done);
  });
  const server: RedisServerProcess = {
    child,
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    output: () => log,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (server.running && child.pid !== undefined) child.kill(signal);
      await exited;
    },
  };
  const timeoutMs = options.readyTimeoutMs ?? 10_000;
  let check = () => undefined as void;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`redis-server ${args.join(' ')} not ready within ${timeoutMs} ms:\n${log}`));
      }, timeoutMs);
      check = () => {
        if (log.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', check);
      child.stderr!.on('data', check);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`redis-server ${args.join(' ')} exited (${code ?? signal}) before it was ready:\n${log}`));
      });
    });
  } catch (err) {
    await server.kill();
    throw err;
  } finally {
    child.stdout!.removeListener('data', check);
    child.stderr!.removeListener('data', check);
  }
  return server;
}

/** Resolve after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Start a server before the enclosing suite's tests and stop it after them (mocha hooks).
 * @returns a getter for the server, valid once the suite's `before` has run
 */
export function useServer<T extends { stop(): Promise<void> }>(start: () => Promise<T>): () => T {
  let server: T | undefined;
  before(async () => {
    server = await start();
  });
  after(async () => server?.stop());
  return () => {
    if (!server) throw new Error('the server is not started yet (use it inside a test or hook)');
    return server;
  };
}
