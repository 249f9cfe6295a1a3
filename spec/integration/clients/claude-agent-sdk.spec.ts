/**
 * Client matrix: the Claude Agent SDK (`@anthropic-ai/claude-agent-sdk`, pinned; ESM-only) through the
 * gateway's native route. `query()` runs the Claude Code binary its own platform package ships
 * (the same 2.1.x as the CLI), so its requests are Claude Code's (see claude-code.spec.ts); the SDK
 * reaches the gateway through the env it gives that process: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { lastToolResults, TEXT_PIECES, toolAnswer } from '../../helpers/agent-upstream';
import { claudeEnv } from '../../helpers/claude-cli';
import { expectLedgerEquals, importEsm, startClientGateway, startRefusingProxy, type ClientGateway } from '../../helpers/client-matrix';
import { tempDir } from '../../helpers/temp-dir';

type AgentSdk = typeof import('@anthropic-ai/claude-agent-sdk');

describe('clients: Claude Agent SDK query() through the native route', function () {
  this.timeout(90_000);
  let c: ClientGateway;
  let proxy: Awaited<ReturnType<typeof startRefusingProxy>>;
  let sdk: AgentSdk;
  let home: string;

  before(async () => {
    [c, proxy, sdk] = await Promise.all([startClientGateway(['agent-sdk']), startRefusingProxy(), importEsm<AgentSdk>('@anthropic-ai/claude-agent-sdk')]);
    home = tempDir('agent-sdk-home-');
  });
  after(async () => Promise.all([c?.close(), proxy?.close()]));
  beforeEach(() => {
    c.gw.upstream.requests.length = 0;
    c.agent.setScript({});
  });

  /** Every message of one query() run with `prompt` (and extra options). */
  const run = async (prompt: string, options: Record<string, unknown> = {}) => {
    const messages: any[] = [];
    const env = claudeEnv(home, { ANTHROPIC_BASE_URL: c.gw.url, ANTHROPIC_API_KEY: c.keys['agent-sdk'] }, proxy.url);
    let stderr = '';
    for await (const message of sdk.query({
      prompt,
      options: { cwd: home, env, model: 'model-sonnet-4.6', settingSources: [], persistSession: false, maxTurns: 4, stderr: (data: string) => (stderr += data), ...options },
    })) {
      messages.push(message);
    }
    const result = messages.find((m) => m.type === 'result');
    expect(result, `no result message; stderr: ${stderr}`).to.not.equal(undefined);
    expect(result.subtype, JSON.stringify(result)).to.equal('success');
    return { messages, result };
  };

  it('answers a prompt with the upstream text', async () => {
    const { result } = await run('hello');
    expect(result.result).to.equal(TEXT_PIECES.join(''));
    const sent = c.gw.upstream.requests.find((r) => r.url.split('?')[0] === '/v1/messages');
    expect(sent?.body).to.include({ model: 'model-sonnet-4.6', stream: true });
  });

  it('streams: includePartialMessages yields each text delta as the upstream sent it', async () => {
    const { messages } = await run('hello', { includePartialMessages: true });
    const deltas = messages
      .filter((m) => m.type === 'stream_event' && m.event.type === 'content_block_delta' && m.event.delta.type === 'text_delta')
      .map((m) => m.event.delta.text);
    expect(deltas).to.deep.equal(TEXT_PIECES);
  });

  it('runs a tool round trip: the upstream asks for Read, the agent sends back its tool_result', async () => {
    const marker = `agent-sdk-tool-check-${process.pid}-${Date.now()}`;
    const file = path.join(home, 'agent-note.txt');
    fs.writeFileSync(file, `${marker}\n`);
    c.agent.setScript({ chooseTool: (offered) => (offered.includes('Read') ? { name: 'Read', input: { file_path: file } } : null) });
    const { result } = await run('read agent-note.txt', { allowedTools: ['Read'] });
    const messageRequests = c.gw.upstream.requests.filter((r) => r.url.split('?')[0] === '/v1/messages');
    const [toolResult] = lastToolResults(messageRequests[messageRequests.length - 1].body);
    expect(toolResult.tool_use_id).to.equal(c.agent.toolUseIds[c.agent.toolUseIds.length - 1]);
    expect(JSON.stringify(toolResult.content)).to.include(marker);
    expect(result.result).to.include(toolAnswer('Read', '')).and.to.include(marker);
  });

  it('bills the key exactly the usage the upstream reported, and nothing left the machine', async () => {
    await expectLedgerEquals(c.gw, 'agent-sdk', c.agent.reported);
    expect(proxy.attempts, 'requests to anything but the gateway').to.deep.equal([]);
  });
});
