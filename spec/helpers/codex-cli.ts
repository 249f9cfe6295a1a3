/**
 * Runs the pinned Codex CLI (`@openai/codex`, its native binary from npm) in `codex exec` against a
 * gateway's Responses route, with a model provider in a temporary CODEX_HOME whose `base_url` is the
 * gateway's `/v1`, `env_key` the key's variable and `wire_api = "responses"`. Codex's own network is
 * off (update check, analytics, feedback, web search, plugins and apps).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KEYS } from './gateway';
import { TEST_CLIENT_MODULES } from './test-clients';
import { tempDir } from './temp-dir';

const CODEX = path.join(TEST_CLIENT_MODULES, '@openai', 'codex', 'bin', 'codex.js');

/** The provider block of docs/responses.md, for a gateway at `baseUrl`. */
function codexConfig(baseUrl: string, model = 'sonnet'): string {
  return [
    `model = "${model}"`,
    'model_provider = "gateway"',
    'approval_policy = "never"',
    // The test's command runs without Codex's sandbox (bubblewrap needs namespaces a CI box may lack).
    'sandbox_mode = "danger-full-access"',
    'check_for_update_on_startup = false',
    'web_search = "disabled"',
    // Without these Codex looks up github.com, api.github.com and chatgpt.com (plugins, apps); with
    // them it opens no connection but the gateway's (checked with strace -e trace=connect,sendto).
    '[features]',
    'plugins = false',
    'remote_plugin = false',
    'apps = false',
    'plugin_sharing = false',
    'tool_suggest = false',
    '[analytics]',
    'enabled = false',
    '[feedback]',
    'enabled = false',
    '[model_providers.gateway]',
    'name = "Model Gateway"',
    `base_url = "${baseUrl}/v1"`,
    'env_key = "GATEWAY_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n');
}

/** Run `codex exec <prompt>` against the gateway at `gw.url` in a fresh CODEX_HOME; resolves with its exit code and output. */
export function codexExec(gw: { url: string }, prompt: string, model?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const home = tempDir('codex-home-');
  fs.writeFileSync(path.join(home, 'config.toml'), codexConfig(gw.url, model));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CODEX, 'exec', '--strict-config', '--skip-git-repo-check', '--ephemeral', prompt], {
      cwd: home,
      env: { PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: home, GATEWAY_API_KEY: KEYS.all },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
