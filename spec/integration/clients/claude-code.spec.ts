/**
 * Client matrix: Claude Code (`@anthropic-ai/claude-code`, pinned in spec/clients/package.json) in print mode,
 * through the gateway's native route, against the agent-like fake upstream.
 *
 * What Claude Code 2.1.331 sends (recorded by these tests' fake upstream), one request per turn:
 * - `POST /v1/messages?beta=true`, always `stream: true` (print mode too: there is no non-streamed
 *   variant to test, so check 1 is the printed answer and check 2 the stream-json deltas);
 * - headers `anthropic-version: 2023-06-01`, `anthropic-beta: claude-code-20250219,
 *   interleaved-thinking-2025-05-14,context-management-2025-06-27,mid-conversation-tool-changes-2026-07-01,
 *   thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24`,
 *   `anthropic-dangerous-direct-browser-access: true`, `x-app: cli`, `x-claude-code-session-id`,
 *   `user-agent: claude-cli/2.1.331 (external, sdk-cli)` and the `x-stainless-*` headers;
 *   ANTHROPIC_API_KEY goes in `x-api-key`, ANTHROPIC_AUTH_TOKEN in `Authorization: Bearer`;
 * - body fields `model`, `messages` (roles `user` then `system`: a mid-conversation system turn after
 *   the prompt), `system` (three text blocks, two with `cache_control`), `tools` (Agent, Bash, Edit,
 *   ListAgents, Read, ReportFindings, ScheduleWakeup, Skill, ToolSearch, Workflow, Write, and one with
 *   `defer_loading`), `metadata.user_id`, `max_tokens: 32000`, `thinking: {type: 'adaptive'}`,
 *   `context_management` (clear_thinking edits), `output_config: {effort: 'high'}`, `stream`.
 * With CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC it sends nothing else (no count_tokens, no side
 * requests to the small model); the refusing proxy shows it contacts no other address.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { lastToolResults, TEXT_PIECES, toolAnswer, type ReportedUsage } from '../../helpers/agent-upstream';
import { claudeEnv, runClaude } from '../../helpers/claude-cli';
import { expectLedgerEquals, expectOneSession, startClientGateway, startRefusingProxy, type ClientGateway } from '../../helpers/client-matrix';
import { startGatewayProcess } from '../../helpers/gateway-process';
import { tempDir } from '../../helpers/temp-dir';

describe('clients: Claude Code (claude -p) through the native route', function () {
  this.timeout(90_000);
  let c: ClientGateway;
  let proxy: Awaited<ReturnType<typeof startRefusingProxy>>;
  let home: string;
  /** The fake's replies to each key's runs (the ledger check compares them with the key's usage). */
  const billed: Record<'claude-code' | 'claude-code-bearer', ReportedUsage[]> = { 'claude-code': [], 'claude-code-bearer': [] };
  const answer = TEXT_PIECES.join('');

  before(async () => {
    [c, proxy] = await Promise.all([startClientGateway(['claude-code', 'claude-code-bearer']), startRefusingProxy()]);
    home = tempDir('claude-code-home-');
  });
  after(async () => Promise.all([c?.close(), proxy?.close()]));
  beforeEach(() => {
    c.gw.upstream.requests.length = 0;
    c.agent.setScript({});
  });

  const withKey = () => claudeEnv(home, { ANTHROPIC_BASE_URL: c.gw.url, ANTHROPIC_API_KEY: c.keys['claude-code'] }, proxy.url);
  const withToken = () => claudeEnv(home, { ANTHROPIC_BASE_URL: c.gw.url, ANTHROPIC_AUTH_TOKEN: c.keys['claude-code-bearer'] }, proxy.url);
  /** Runs claude, expects a clean exit, and notes how many replies the key was billed for. */
  const run = async (args: string[], env: Record<string, string>, key: keyof typeof billed) => {
    const before = c.agent.reported.length;
    const result = await runClaude(args, home, env);
    billed[key].push(...c.agent.reported.slice(before));
    expect(result.code, `claude exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`).to.equal(0);
    return result;
  };

  it('ANTHROPIC_API_KEY: `claude -p hello` prints the upstream answer; the request went upstream as sent', async () => {
    const { stdout } = await run(['-p', 'hello'], withKey(), 'claude-code');
    expect(stdout.trim()).to.equal(answer);
    const [sent] = c.gw.upstream.requests.filter((r) => r.url.split('?')[0] === '/v1/messages');
    expect(sent.url).to.equal('/v1/messages?beta=true');
    expect(sent.headers['anthropic-beta']).to.match(/claude-code-20250219/);
    expect(sent.body).to.include({ model: 'model-sonnet-4.6', stream: true });
    expect(JSON.stringify(sent.body.messages)).to.include('hello');
  });

  it('ANTHROPIC_AUTH_TOKEN (Authorization: Bearer): `claude -p hello` prints the upstream answer', async () => {
    const { stdout } = await run(['-p', 'hello'], withToken(), 'claude-code-bearer');
    expect(stdout.trim()).to.equal(answer);
  });

  it('streams: --output-format stream-json shows each text delta as the upstream sent it', async () => {
    const { stdout } = await run(['-p', 'hello', '--output-format', 'stream-json', '--verbose', '--include-partial-messages'], withKey(), 'claude-code');
    const lines = stdout.split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line));
    const deltas = lines
      .filter((line) => line.type === 'stream_event' && line.event?.type === 'content_block_delta' && line.event.delta?.type === 'text_delta')
      .map((line) => line.event.delta.text);
    expect(deltas).to.deep.equal(TEXT_PIECES);
    expect(lines.find((line) => line.type === 'result')).to.include({ subtype: 'success', result: answer });
  });

  it('runs a tool round trip: the upstream asks for Read, Claude Code reads the file and sends its tool_result', async () => {
    const marker = `gateway-tool-check-${process.pid}-${Date.now()}`;
    const file = path.join(home, 'note.txt');
    fs.writeFileSync(file, `${marker}\n`);
    c.agent.setScript({ chooseTool: (offered) => (offered.includes('Read') ? { name: 'Read', input: { file_path: file } } : null) });
    const { stdout } = await run(['-p', 'read note.txt', '--allowedTools', 'Read'], withKey(), 'claude-code');
    const messageRequests = c.gw.upstream.requests.filter((r) => r.url.split('?')[0] === '/v1/messages');
    expect(messageRequests.length).to.be.at.least(2);
    const toolUseId = c.agent.toolUseIds[c.agent.toolUseIds.length - 1];
    const [result] = lastToolResults(messageRequests[messageRequests.length - 1].body);
    expect(result.tool_use_id).to.equal(toolUseId);
    expect(result.is_error ?? false).to.equal(false);
    expect(JSON.stringify(result.content)).to.include(marker);
    expect(stdout).to.include(toolAnswer('Read', '')).and.to.include(marker);
  });

  it('a run of several turns (a tool round trip, then a resumed turn) is one session in the usage by session', async () => {
    const sessionId = randomUUID();
    const file = path.join(home, 'session-note.txt');
    fs.writeFileSync(file, 'session note\n');
    c.agent.setScript({ chooseTool: (offered) => (offered.includes('Read') ? { name: 'Read', input: { file_path: file } } : null) });
    await run(['-p', 'read session-note.txt', '--allowedTools', 'Read', '--session-id', sessionId], withKey(), 'claude-code');
    c.agent.setScript({});
    await run(['-p', 'and once more', '--resume', sessionId], withKey(), 'claude-code');
    const sent = c.gw.upstream.requests.filter((r) => r.url.split('?')[0] === '/v1/messages');
    expect(sent.length).to.be.at.least(3);
    // Claude Code names its session on every request: the gateway forwards the header as it came.
    expect(sent.every((r) => r.headers['x-claude-code-session-id'] === sessionId)).to.equal(true);
    await expectOneSession(c.gw, 'claude-code', sessionId, sent.length);
  });

  it('bills each key exactly the usage the upstream reported, and nothing left the machine', async () => {
    expect(billed['claude-code'].length + billed['claude-code-bearer'].length).to.equal(c.agent.reported.length);
    await expectLedgerEquals(c.gw, 'claude-code', billed['claude-code']);
    await expectLedgerEquals(c.gw, 'claude-code-bearer', billed['claude-code-bearer']);
    expect(proxy.attempts, 'requests to anything but the gateway').to.deep.equal([]);
  });
});

describe('clients: Claude Code on the embedded default (npm start with no upstream)', function () {
  this.timeout(90_000);

  it('`claude -p` with only ANTHROPIC_BASE_URL, the printed development key and ANTHROPIC_MODEL prints the simulated reply', async () => {
    const [gateway, proxy] = await Promise.all([startGatewayProcess({}), startRefusingProxy()]);
    try {
      // The key is printed just after the listening line.
      const printed = () => /\n {4}(sk-\S+)\n/.exec(gateway.output())?.[1];
      for (let i = 0; i < 100 && !printed(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      const key = printed();
      expect(key, gateway.output()).to.be.a('string');
      const home = tempDir('claude-code-default-');
      // claudeEnv's isolation (own HOME, no non-essential traffic, refusing proxy), then only the three settings.
      const { ANTHROPIC_DEFAULT_HAIKU_MODEL: _haiku, ...env } = claudeEnv(home, {}, proxy.url);
      const run = await runClaude(['-p', 'hello gateway'], home, {
        ...env, ANTHROPIC_BASE_URL: gateway.url, ANTHROPIC_API_KEY: key!, ANTHROPIC_MODEL: 'model-sonnet-4.6',
      });
      expect(run.code, `stdout: ${run.stdout}\nstderr: ${run.stderr}\ngateway: ${gateway.output()}`).to.equal(0);
      expect(run.stdout).to.contain('This is a simulated reply from model-sonnet-4.6');
      expect(proxy.attempts, 'requests to anything but the gateway').to.deep.equal([]);
    } finally {
      await Promise.all([gateway.stop(), proxy.close()]);
    }
  });
});
