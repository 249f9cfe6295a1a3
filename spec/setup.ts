/**
 * The suite's global set-up, loaded by mocha before any spec (`.mocharc.json` `require`).
 *
 * - What the suite needs from the system is checked when this module loads: without `redis-server` or
 *   Debian's chromium the run stops at once with one line naming the Debian package to install.
 * - Redis: `TEST_REDIS_URL` when set; otherwise a disposable `redis-server` of this run, on a free
 *   loopback port, with no persistence and a temporary directory, stopped when the run ends. Either way
 *   its URL is left in `process.env.TEST_REDIS_URL` for the tests and the gateways they spawn
 *   (spec/helpers/redis.ts). `REDIS_URL` is removed from the environment: the tests never use the
 *   user's Redis (on the default port or anywhere else) unless `TEST_REDIS_URL` names it.
 * - The client matrix (spec/clients/) is made resolvable for the specs (spec/helpers/test-clients.ts).
 * - `npm run test:unit` (.mocharc.unit.json) loads spec/unit-scope.ts first, which sets
 *   `GATEWAY_TEST_SCOPE=unit`: then nothing is needed from the system and no Redis is started (the specs
 *   of that run use neither).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './helpers/ports';
import { registerTestClients } from './helpers/test-clients';

/** The chromium the dashboard test drives (spec/browser/dashboard.spec.ts), unless CHROMIUM_PATH names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether `command` is an executable file in one of the `PATH` directories. */
function onPath(command: string, searchPath: string): boolean {
  return searchPath.split(path.delimiter).filter(Boolean).some((dir) => {
    try {
      fs.accessSync(path.join(dir, command), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether this run is `npm run test:unit` (no Redis, no browser). */
export function isUnitScope(env: NodeJS.ProcessEnv): boolean {
  return env.GATEWAY_TEST_SCOPE === 'unit';
}

/**
 * The first thing the suite needs that this machine lacks, as the line to print, or null.
 * @param env the environment (`PATH`, `TEST_REDIS_URL`: with it no redis-server is started, so none is
 *   needed; `GATEWAY_TEST_SCOPE=unit`: the unit run needs neither Redis nor chromium)
 * @param chromium the browser's path
 */
export function findMissingNeed(env: NodeJS.ProcessEnv, chromium: string): string | null {
  if (isUnitScope(env)) return null;
  if (!env.TEST_REDIS_URL && !onPath('redis-server', env.PATH ?? '')) {
    return 'npm test needs redis-server (it starts one of its own): apt-get install redis-server';
  }
  if (!fs.existsSync(chromium)) return `npm test needs chromium at ${chromium} (the dashboard test): apt-get install chromium`;
  return null;
}

/** The Redis the tests use when one is given (`TEST_REDIS_URL`); null: start a disposable one. `REDIS_URL` is never read. */
export function givenTestRedisUrl(env: NodeJS.ProcessEnv): string | null {
  return env.TEST_REDIS_URL || null;
}

/** The Redis of this run: its URL, and whether the suite started it (and stops it). */
export const suiteRedis = { url: '', disposable: false };

let server: ChildProcess | undefined;
let serverDir: string | undefined;

/**
 * Start `redis-server` on a free loopback port, without persistence, in a temporary directory.
 * @returns its URL once it accepts connections
 * @throws Error with the server's output when it exits first or is not ready within 10 s
 */
async function startDisposableRedis(): Promise<string> {
  const port = await freePort();
  serverDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-test-redis-'));
  const child = spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', serverDir,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  server = child;
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server not ready on port ${port} within 10 s:\n${output}`)), 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (err) => reject(err));
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)));
  });
  // Its later output is not needed, but the pipes must keep draining.
  child.stdout!.removeAllListeners('data').resume();
  child.stderr!.removeAllListeners('data').resume();
  // Should the run end without the teardown (a crash, process.exit in a test), the server goes too.
  process.once('exit', () => child.kill('SIGKILL'));
  return `redis://127.0.0.1:${port}`;
}

/** Mocha global fixture: before the first test. */
export async function mochaGlobalSetup(): Promise<void> {
  if (isUnitScope(process.env)) return;
  const given = givenTestRedisUrl(process.env);
  suiteRedis.disposable = !given;
  suiteRedis.url = given ?? (await startDisposableRedis());
  process.env.TEST_REDIS_URL = suiteRedis.url;
}

/** Mocha global fixture: after the last test. */
export async function mochaGlobalTeardown(): Promise<void> {
  const child = server;
  server = undefined;
  if (child && child.exitCode === null && child.signalCode === null) {
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  }
  if (serverDir) fs.rmSync(serverDir, { recursive: true, force: true });
}

// Checked on load, before mocha reads a spec file, so a run without what it needs stops at once.
const missing = findMissingNeed(process.env, CHROMIUM);
if (missing) {
  process.stderr.write(`${missing}\n`);
  process.exit(1);
}
delete process.env.REDIS_URL;
registerTestClients();
