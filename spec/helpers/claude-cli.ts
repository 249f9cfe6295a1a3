/**
 * Runs the pinned Claude Code CLI (`@anthropic-ai/claude-code`, a native binary from its platform
 * package) in print mode against a gateway, isolated: a temporary HOME and config directory, every
 * non-essential traffic switch off, and an HTTP(S) proxy that refuses whatever is not loopback.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { TEST_CLIENT_MODULES } from './test-clients';

/** What a finished `claude` run printed. */
export interface ClaudeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The command that runs the CLI: `bin/claude.exe`, which the package's postinstall replaces with
 * the native binary of the platform package; when install scripts did not run it is still the
 * package's small placeholder, and the package's own fallback launcher (`cli-wrapper.cjs`, which
 * finds the same platform package) is used instead.
 */
export function claudeCommand(): string[] {
  const dir = path.join(TEST_CLIENT_MODULES, '@anthropic-ai', 'claude-code');
  const binary = path.join(dir, 'bin', 'claude.exe');
  if (fs.statSync(binary).size > 1_000_000) return [binary];
  return [process.execPath, path.join(dir, 'cli-wrapper.cjs')];
}

/**
 * The environment a test gives Claude Code: nothing inherited but PATH, its own HOME and config
 * directory, the models the gateway's catalogue knows, and no traffic besides the API calls
 * (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC implies DISABLE_TELEMETRY, DISABLE_AUTOUPDATER,
 * DISABLE_ERROR_REPORTING and DISABLE_BUG_COMMAND; they are set as well so each one is visible).
 */
export function claudeEnv(home: string, gateway: Record<string, string>, proxyUrl: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    ANTHROPIC_MODEL: 'model-sonnet-4.6',
    ANTHROPIC_DEFAULT_HAIKU_MODEL: 'model-haiku-4.5',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_BUG_COMMAND: '1',
    HTTPS_PROXY: proxyUrl,
    HTTP_PROXY: proxyUrl,
    NO_PROXY: '127.0.0.1,localhost',
    ...gateway,
  };
}

/**
 * Run `claude <args>` in `cwd` with `env`, stdin closed. Resolves when it exits (killed after
 * `timeoutMs`, default 60 s, so a hung CLI fails the test instead of the suite).
 */
export function runClaude(args: string[], cwd: string, env: Record<string, string>, timeoutMs = 60_000): Promise<ClaudeRun> {
  const [command, ...prefix] = claudeCommand();
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...prefix, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
