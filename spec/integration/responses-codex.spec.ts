/**
 * Codex CLI (`@openai/codex`, its native binary from npm) in `codex exec` against the gateway's
 * Responses route, with a model provider in a temporary CODEX_HOME whose `base_url` is the gateway's
 * `/v1`, `env_key` the key's variable and `wire_api = "responses"`. Codex's own network is off
 * (update check, analytics, feedback, web search, plugins and apps): it talks only to the gateway on
 * 127.0.0.1.
 */
import { expect } from 'chai';
import { codexExec } from '../helpers/codex-cli';
import type { FakeHandler } from '../helpers/fake-upstream';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { createAgentUpstream } from '../helpers/agent-upstream';
import { expectOneSession } from '../helpers/client-matrix';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { roundTripHandler, streamOf, waitForRequestLines } from '../helpers/responses-upstream';

describe('Responses API (Codex CLI, codex exec)', function () {
  this.timeout(90_000);
  let gw: TestGateway;

  before(async () => {
    gw = await startTestGateway({ env: { ADMIN_TOKEN } });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
  });

  it('prints the model\'s answer', async () => {
    const answer: FakeHandler = (request) => ({ kind: 'stream', events: streamOf([{ type: 'text', text: 'PONG from the gateway' }], 'end_turn', { input_tokens: 10, output_tokens: 5 }, request.body.model) });
    gw.upstream.setHandler(answer);
    const lines = gw.logLines.filter((line) => line.message === 'request' && line.route === 'POST /v1/responses').length;
    const run = await codexExec(gw, 'Say pong');
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout.trim()).to.equal('PONG from the gateway');
    const sent = gw.upstream.requests[0].body;
    expect(sent.model).to.equal('model-sonnet-4.6');
    expect(sent.stream).to.equal(true);
    // Codex sends no max_output_tokens: the model's output ceiling, as the Responses API's default.
    expect(sent.max_tokens).to.equal(64000);
    // Its long instructions are a cached prefix: a text block carrying a cache breakpoint.
    expect(sent.system).to.have.length(1);
    expect(sent.system[0]).to.include({ type: 'text' }).and.to.have.deep.property('cache_control', { type: 'ephemeral' });
    expect(sent.tools.map((tool: { name: string }) => tool.name)).to.include('exec_command');
    const [line] = (await waitForRequestLines(gw, lines + 1)).slice(-1);
    expect(line).to.include({ status: 200, input_tokens: 10, output_tokens: 5, key_id: 'team-all' });
  });

  it('runs the model\'s call of its exec_command tool and sends the output back as the tool_result for the same id', async () => {
    gw.upstream.setHandler(roundTripHandler({ toolName: 'exec_command', toolInput: { cmd: 'echo gateway-$((6*7))' }, answer: 'The command printed gateway-42.' }));
    const run = await codexExec(gw, 'Run the echo command');
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout.trim()).to.equal('The command printed gateway-42.');
    expect(gw.upstream.requests).to.have.length(2);
    const [call, result] = gw.upstream.requests[1].body.messages.slice(-2);
    expect(call).to.deep.equal({ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01Paris', name: 'exec_command', input: { cmd: 'echo gateway-$((6*7))' } }] });
    expect(result.role).to.equal('user');
    expect(result.content).to.have.length(1);
    expect(result.content[0]).to.include({ type: 'tool_result', tool_use_id: 'toolu_01Paris' });
    // Codex ran the command: its output (not the command line) is in the result.
    expect(result.content[0].content).to.contain('gateway-42');
  });

  it('a run of several turns (the exec_command round trip) is one session in the usage by session', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const sessionsNow = async () => ((await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=session&keyId=team-all`)).body.rows as Array<{ sessionId: string | null; requests: number }>);
    const known = new Set((await sessionsNow()).map((row) => row.sessionId));
    gw.upstream.setHandler(roundTripHandler({ toolName: 'exec_command', toolInput: { cmd: 'echo session-check' }, answer: 'Done.' }));
    const run = await codexExec(gw, 'Run the echo command');
    expect(run.code, run.stderr).to.equal(0);
    expect(gw.upstream.requests).to.have.length(2);
    // Records are written as each response closes: wait for the run's session to hold both turns.
    let fresh: Array<{ sessionId: string | null; requests: number }> = [];
    for (let i = 0; i < 100; i++) {
      fresh = (await sessionsNow()).filter((row) => !known.has(row.sessionId));
      if (fresh.reduce((sum, row) => sum + row.requests, 0) >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // One new session, named by Codex's session-id header (its thread id, a UUID), not the chain root.
    expect(fresh).to.have.length(1);
    expect(fresh[0].sessionId).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await expectOneSession(gw, 'team-all', fresh[0].sessionId!, 2);
  });
  it('its second turn reads the prompt cache the first wrote, and the ledger bills those tokens at the cache-read price', async () => {
    const agent = createAgentUpstream({ chooseTool: (offered) => (offered.includes('exec_command') ? { name: 'exec_command', input: { cmd: 'echo cached' } } : null) });
    gw.upstream.setHandler(agent.handler);
    const month = new Date().toISOString().slice(0, 7);
    const creditsOf = async () => (await gw.gateway.store.getUsage('team-all', month)).reduce((sum, row) => sum + row.credits, 0);
    const before = await creditsOf();
    const run = await codexExec(gw, 'Run the echo command');
    expect(run.code, run.stderr).to.equal(0);
    expect(agent.reported).to.have.length(2);
    const [first, second] = agent.reported;
    expect(first.cache_creation_input_tokens, 'the first turn writes its prefix').to.be.greaterThan(1000);
    expect(second.cache_read_input_tokens, 'the second turn reads what the first wrote').to.equal(first.cache_creation_input_tokens);
    const pricing = gw.config.models.find((m) => m.id === 'model-sonnet-4.6')!.pricing;
    const expected = agent.reported.reduce((sum, u) => sum + (u.input_tokens * pricing.inputPerMillion + u.output_tokens * pricing.outputPerMillion
      + u.cache_creation_input_tokens * pricing.cacheWritePerMillion! + u.cache_read_input_tokens * pricing.cacheReadPerMillion!) / 1_000_000, 0);
    let after = await creditsOf();
    for (let i = 0; i < 100 && Math.abs(after - before - expected) > 1e-9; i++) after = await new Promise((r) => setTimeout(r, 50)).then(creditsOf);
    expect(after - before).to.be.closeTo(expected, 1e-9);
  });

  it('a prompt too long for the model reaches Codex as the context-window error it recovers from (compacting), not as a failed request', async () => {
    // codex-rs matches the code context_length_exceeded, in an HTTP 400 body or a response.failed event.
    gw.upstream.setHandler(() => ({ kind: 'json', status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 1000123 tokens > 1000000 maximum' } } }));
    const run = await codexExec(gw, 'Say pong');
    expect(run.code).not.to.equal(0);
    expect(run.stdout + run.stderr).to.contain("ran out of room in the model's context window");
  });

  it('a reply that fills the context window ends in that same error, not as an incomplete reply Codex would retry', async () => {
    gw.upstream.setHandler((request) => ({ kind: 'stream', events: streamOf([{ type: 'text', text: 'Part of a long' }], 'model_context_window_exceeded', { input_tokens: 10, output_tokens: 5 }, request.body.model) }));
    const run = await codexExec(gw, 'Say pong');
    expect(run.code).not.to.equal(0);
    expect(run.stdout + run.stderr).to.contain("ran out of room in the model's context window");
    expect(gw.upstream.requests, 'no retry of the turn').to.have.length(1);
  });

  for (const [mode, model] of [['adaptive only', 'opus'], ['budget only', 'haiku'], ['thinking by default', 'model-opus-5'], ['always thinking', 'model-fable-5']]) {
    it(`a tool round trip on ${model} (${mode}) passes the upstream's rules for that model`, async () => {
      const agent = createAgentUpstream({ chooseTool: (offered) => (offered.includes('exec_command') ? { name: 'exec_command', input: { cmd: 'echo mode' } } : null) });
      gw.upstream.setHandler(agent.handler);
      const run = await codexExec(gw, 'Run the echo command', model);
      expect(run.code, run.stderr).to.equal(0);
      expect(gw.upstream.requests.map((request) => request.body.model)).to.have.length(2);
      const [, result] = gw.upstream.requests[1].body.messages.slice(-2);
      expect(result.content[0]).to.include({ type: 'tool_result' });
    });
  }
});
