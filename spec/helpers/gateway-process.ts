/**
 * A gateway as a real process (`node dist/lib/server.js`), as a deployment runs it: its own config
 * file, env and port. For the tests of several instances sharing one Redis, and of a restart.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { tempDir } from './temp-dir';

const SERVER = path.resolve(__dirname, '..', '..', 'lib', 'server.js');
const KEYS_CLI = path.resolve(__dirname, '..', '..', 'lib', 'keys', 'cli.js');

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Send SIGTERM and resolve with the exit code. */
  stop(): Promise<number | null>;
}

/** Write a config object to a temporary file (removed when the test run exits); returns its path. */
export function writeTempConfig(config: Record<string, unknown>): string {
  const dir = tempDir('gw-config-');
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}

/**
 * Start `dist/lib/server.js` on an ephemeral port; resolves once it logs that it is listening.
 * `nodeOptions`: flags for node before the script (e.g. `--require` of a probe). Default none.
 * Unless `env` names a GATEWAY_STATE_FILE, the memory store's state goes to a file of this process's
 * own in a temporary directory (removed when it stops), never to the default `.gateway-usage.json` in
 * the working directory: that is the developer's own, and the test keys saved in it would keep
 * `npm start` from issuing a development key.
 */
export function startGatewayProcess(env: Record<string, string>, nodeOptions: string[] = []): Promise<GatewayProcess> {
  const stateDir = env.GATEWAY_STATE_FILE === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'gw-state-')) : undefined;
  const child = spawn(process.execPath, [...nodeOptions, SERVER], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...(stateDir ? { GATEWAY_STATE_FILE: path.join(stateDir, 'state.json') } : {}), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
    resolve(code);
  }));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway process did not start:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const port = /"message":"gateway listening"[^\n]*"port":(\d+)|"port":(\d+)[^\n]*"message":"gateway listening"/.exec(output);
      if (!port) return;
      clearTimeout(timer);
      resolve({
        url: `http://127.0.0.1:${port[1] ?? port[2]}`,
        child,
        output: () => output,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway process exited with ${code} before listening:\n${output}`));
    });
  });
}

/** Run the key CLI (`dist/lib/keys/cli.js`) with `args`; resolves with its exit status and output. */
export function runKeysProcess(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [KEYS_CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
}
