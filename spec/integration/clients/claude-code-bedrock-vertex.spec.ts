/**
 * Issue 43, item 7: Claude Code (`claude -p`, pinned in spec/clients/package.json, its betas on: no
 * CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS) through a gateway process whose pool is on the clouds, each
 * a local fake that checks what its cloud checks (cloud-gateway.ts) and answers as a model in an agent
 * loop (agent-upstream.ts: a Read tool call, then text quoting the tool's result). Several turns with
 * a tool, streaming, through a Bedrock-only pool and a Vertex-only pool; the betas and body fields a
 * cloud refuses are dropped (named in x-gateway-dropped-params), never a 400; through a pool of all
 * three whose Bedrock target answers ThrottlingException, the session moves before the first byte and
 * stays on its new target. The key's usage equals what the fakes reported.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { createAgentUpstream, lastToolResults, toolAnswer, TEXT_PIECES } from '../../helpers/agent-upstream';
import { claudeEnv, runClaude } from '../../helpers/claude-cli';
import { startRefusingProxy } from '../../helpers/client-matrix';
import { KEYS, startCloudFakes, startCloudGateway, type CloudFakes, type CloudGateway } from '../../helpers/cloud-gateway';
import { THROTTLED } from '../../helpers/fake-bedrock';
import { tempDir } from '../../helpers/temp-dir';

/** What Claude Code 2.1.331 sends in `anthropic-beta` (claude-code.spec.ts records it). */
const CLAUDE_CODE_BETAS = 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24';

/**
 * Send Claude Code's betas by hand with `extra` body fields (a 200 is expected) and answer the names in
 * the reply's `x-gateway-dropped-params`.
 */
async function droppedByHand(url: string, extra: Record<string, unknown>): Promise<string[]> {
  const response = await fetch(`${url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'anthropic-beta': CLAUDE_CODE_BETAS, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], ...extra }),
  });
  const text = await response.text();
  expect(response.status, text).to.equal(200);
  return String(response.headers.get('x-gateway-dropped-params')).split(',').map((name) => name.trim());
}

describe('clients: Claude Code through cloud targets (Bedrock, Vertex AI, a pool of three)', function () {
  this.timeout(180_000);
  const agent = createAgentUpstream();
  let fakes: CloudFakes;
  let proxy: Awaited<ReturnType<typeof startRefusingProxy>>;
  let home: string;
  let gw: CloudGateway | undefined;

  before(async () => {
    [fakes, proxy] = await Promise.all([startCloudFakes(agent.handler), startRefusingProxy()]);
    home = tempDir('claude-code-clouds-home-');
  });
  afterEach(async () => {
    agent.setScript({});
    fakes.setHandler(agent.handler);
    await gw?.stop();
    gw = undefined;
  });
  after(async () => Promise.all([fakes?.close(), proxy?.close()]));

  /** Message calls each cloud's fake received (refused or not). */
  const bedrockCalls = () => fakes.bedrock.records.filter((r) => /\/invoke(-with-response-stream)?$/.test(r.url));
  const vertexCalls = () => fakes.vertex.requests.filter((r) => /:(streamRawPredict|rawPredict)$/.test(r.url) && !r.url.includes('count-tokens'));
  const foundryCalls = () => fakes.foundry.requests.filter((r) => r.url.split('?')[0] === '/anthropic/v1/messages');
  const counts = () => [bedrockCalls().length, vertexCalls().length, foundryCalls().length];

  const run = async (args: string[]) => {
    const result = await runClaude(args, home, claudeEnv(home, { ANTHROPIC_BASE_URL: gw!.url, ANTHROPIC_API_KEY: KEYS.all }, proxy.url), 90_000);
    expect(result.code, `claude exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}\ngateway: ${gw!.output().slice(-3000)}`).to.equal(0);
    return result.stdout;
  };

  /** A session of three turns: Read a file (a tool round trip), then a resumed plain turn. */
  async function toolSession(): Promise<{ session: string; marker: string; stdout: string[] }> {
    const session = randomUUID();
    const marker = `cloud-tool-check-${randomUUID()}`;
    const file = path.join(home, `${session}.txt`);
    fs.writeFileSync(file, `${marker}\n`);
    agent.setScript({ chooseTool: (offered) => (offered.includes('Read') ? { name: 'Read', input: { file_path: file } } : null) });
    const first = await run(['-p', `read ${path.basename(file)}`, '--allowedTools', 'Read', '--session-id', session]);
    agent.setScript({});
    const second = await run(['-p', 'and once more', '--resume', session]);
    expect(first).to.include(toolAnswer('Read', '')).and.to.include(marker);
    expect(second.trim()).to.equal(TEXT_PIECES.join(''));
    return { session, marker, stdout: [first, second] };
  }

  /** The key's usage equals what the fakes reported since `from` (the agent's reported list). */
  async function expectBilledAsReported(from: number): Promise<void> {
    const reported = agent.reported.slice(from);
    const usage = await gw!.usage(reported.length);
    expect([usage.requests, usage.inputTokens, usage.outputTokens, usage.cacheReadInputTokens, usage.cacheCreationInputTokens]).to.deep.equal([
      reported.length,
      reported.reduce((sum, u) => sum + u.input_tokens, 0),
      reported.reduce((sum, u) => sum + u.output_tokens, 0),
      reported.reduce((sum, u) => sum + u.cache_read_input_tokens, 0),
      reported.reduce((sum, u) => sum + u.cache_creation_input_tokens, 0),
    ]);
  }

  it('Bedrock-only pool: several turns with a tool, streamed, signed with SigV4; billed as reported', async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock')]);
    const [calls, reported] = [bedrockCalls().length, agent.reported.length];
    const { session, marker } = await toolSession();
    const sent = bedrockCalls().slice(calls);
    expect(sent.length).to.be.at.least(3);
    expect(sent.every((r) => r.url.endsWith('/invoke-with-response-stream')), 'every turn streamed').to.equal(true);
    expect(sent.every((r) => String(r.headers.authorization).startsWith('AWS4-HMAC-SHA256 '))).to.equal(true);
    // Claude Code's betas went as Bedrock takes them: the flags Bedrock lists, in the body's anthropic_beta.
    expect(sent.every((r) => Array.isArray(r.body.anthropic_beta) && !r.body.anthropic_beta.includes('claude-code-20250219'))).to.equal(true);
    expect(sent.every((r) => r.headers['x-claude-code-session-id'] === undefined || r.headers['x-claude-code-session-id'] === session)).to.equal(true);
    const [result] = lastToolResults(sent.find((r) => lastToolResults(r.body).length > 0)!.body);
    expect(JSON.stringify(result.content)).to.include(marker);
    await expectBilledAsReported(reported);

    // Claude Code's betas by hand, with a tool streaming its input eagerly: what Bedrock refuses is dropped and named.
    const dropped = await droppedByHand(gw.url, { tools: [{ name: 'lookup', description: 'Look it up', input_schema: { type: 'object', properties: {} }, eager_input_streaming: true }] });
    expect(dropped).to.include.members(['claude-code-20250219', 'mid-conversation-tool-changes-2026-07-01', 'thinking-token-count-2026-05-13', 'advanced-tool-use-2025-11-20', 'tools[].eager_input_streaming']);
    expect(dropped).not.to.include.any.members(['interleaved-thinking-2025-05-14', 'context-management-2025-06-27', 'effort-2025-11-24']);
    const last = bedrockCalls().at(-1)!;
    expect(last.body.anthropic_beta).to.deep.equal(['interleaved-thinking-2025-05-14', 'context-management-2025-06-27', 'effort-2025-11-24']);
    expect(last.body.tools[0]).not.to.have.property('eager_input_streaming');
  });

  it('Vertex-only pool: several turns with a tool; the betas and fields Vertex refuses are dropped, not a 400', async () => {
    gw = await startCloudGateway(fakes, [fakes.target('vertex')]);
    const [calls, reported] = [vertexCalls().length, agent.reported.length];
    const { marker } = await toolSession();
    const sent = vertexCalls().slice(calls);
    expect(sent.length).to.be.at.least(3);
    expect(sent.every((r) => r.url.endsWith(':streamRawPredict'))).to.equal(true);
    for (const request of sent) {
      expect(String(request.headers['anthropic-beta'] ?? '')).not.to.match(/claude-code-20250219|context-management|effort-/);
      expect(request.body).not.to.have.any.keys('context_management', 'output_config', 'model');
    }
    expect(JSON.stringify(sent.map((r) => r.body.messages))).to.include(marker);
    await expectBilledAsReported(reported);

    // The same request as Claude Code's, by hand: answered 200, the dropped flags and fields named.
    const dropped = await droppedByHand(gw.url, { context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] }, output_config: { effort: 'high' } });
    expect(dropped).to.include.members(['claude-code-20250219', 'context-management-2025-06-27', 'effort-2025-11-24', 'context_management', 'output_config']);
    expect(dropped).not.to.include('interleaved-thinking-2025-05-14');
  });

  it('pool of three, Bedrock throttled: the session moves before the first byte and stays on its new target', async () => {
    gw = await startCloudGateway(fakes, [fakes.target('bedrock'), fakes.target('vertex'), fakes.target('foundry')]);
    fakes.bedrock.setScript(() => THROTTLED);
    const before = counts();
    const reported = agent.reported.length;
    // The first turn tries Bedrock first (config order breaks the tie): ThrottlingException, then another cloud.
    await toolSession();
    const moved = counts();
    expect(moved[0] - before[0], 'the one throttled attempt on Bedrock').to.equal(1);
    const landed = [moved[1] - before[1], moved[2] - before[2]];
    expect(landed.filter((n) => n > 0), `the session's turns after the move (vertex, foundry): ${landed}`).to.have.length(1);
    expect(landed[0] + landed[1]).to.be.at.least(3);
    // Bedrock answers again: a new session stays on whichever target took its first turn.
    fakes.setHandler(agent.handler);
    const session = randomUUID();
    await run(['-p', 'hello', '--session-id', session]);
    await run(['-p', 'again', '--resume', session]);
    await run(['-p', 'and again', '--resume', session]);
    const after = counts();
    const grew = after.map((n, i) => n - moved[i]);
    expect(grew.filter((n) => n > 0), `the new session's turns (bedrock, vertex, foundry): ${grew}`).to.have.length(1);
    await expectBilledAsReported(reported);
    expect(proxy.attempts, 'requests to anything but the gateway').to.deep.equal([]);
  });
});
