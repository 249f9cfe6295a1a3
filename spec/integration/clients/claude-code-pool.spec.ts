/**
 * Session affinity with the client that needs it: Claude Code (`claude -p`, pinned in package.json)
 * through a gateway whose upstream has two targets, each an agent-like fake. Claude Code names its
 * session in `x-claude-code-session-id` on every request; a session's requests must reach one target
 * (its prompt cache), move once when that target answers 529 (`overloaded_error`,
 * https://docs.anthropic.com/en/api/errors), and stay on the new target afterwards. The key's ledger
 * equals the usage both fakes reported.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { createAgentUpstream, TEXT_PIECES, type ReportedUsage } from '../../helpers/agent-upstream';
import { claudeEnv, runClaude } from '../../helpers/claude-cli';
import { startRefusingProxy } from '../../helpers/client-matrix';
import { startFakeUpstream, type FakeUpstream } from '../../helpers/fake-upstream';
import { KEYS } from '../../helpers/gateway';
import { startPoolGateway, type PoolGateway } from '../../helpers/pool-gateway';
import { tempDir } from '../../helpers/temp-dir';

describe('clients: Claude Code sessions over an upstream pool', function () {
  this.timeout(120_000);
  const agents = [createAgentUpstream(), createAgentUpstream()];
  let fakes: FakeUpstream[];
  let gw: PoolGateway;
  let proxy: Awaited<ReturnType<typeof startRefusingProxy>>;
  let home: string;

  before(async () => {
    fakes = await Promise.all(agents.map((agent) => startFakeUpstream(agent.handler)));
    [gw, proxy] = await Promise.all([
      startPoolGateway([{ id: 'a', url: fakes[0].url }, { id: 'b', url: fakes[1].url, apiKeyEnv: 'POOL_KEY_B' }]),
      startRefusingProxy(),
    ]);
    home = tempDir('claude-code-pool-home-');
  });
  after(async () => Promise.all([gw?.close(), proxy?.close(), ...(fakes ?? []).map((fake) => fake.close())]));

  const env = () => claudeEnv(home, { ANTHROPIC_BASE_URL: gw.url, ANTHROPIC_API_KEY: KEYS.all }, proxy.url);
  const messageRequests = (fake: FakeUpstream) => fake.requests.filter((r) => r.url.split('?')[0] === '/v1/messages');
  const run = async (args: string[]) => {
    const result = await runClaude(args, home, env());
    expect(result.code, `claude exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`).to.equal(0);
    expect(result.stdout.trim()).to.equal(TEXT_PIECES.join(''));
  };

  it('keeps a session on one target, moves it once when that target fails, and keeps it there', async () => {
    const session = crypto.randomUUID();
    await run(['-p', 'hello', '--session-id', session]);
    await run(['-p', 'again', '--resume', session]);
    const counts = fakes.map((fake) => messageRequests(fake).length);
    const home = counts[0] > 0 ? 0 : 1;
    const other = 1 - home;
    expect(counts[other], 'every request of the session on one target').to.equal(0);
    expect(counts[home]).to.be.at.least(2);
    expect(messageRequests(fakes[home]).every((r) => r.headers['x-claude-code-session-id'] === session)).to.equal(true);

    // The session's target is overloaded: one failed attempt, then the session moves.
    fakes[home].setHandler(() => ({ kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    await run(['-p', 'third', '--resume', session]);
    fakes[home].setHandler(agents[home].handler);
    await run(['-p', 'fourth', '--resume', session]);
    const after = fakes.map((fake) => messageRequests(fake).length);
    expect(after[home] - counts[home], 'the one failed attempt').to.equal(1);
    expect(after[other]).to.be.at.least(2);

    const reported: ReportedUsage[] = [...agents[0].reported, ...agents[1].reported];
    const ledger = await gw.ledger();
    expect(ledger).to.deep.equal({
      requests: reported.length,
      inputTokens: reported.reduce((sum, u) => sum + u.input_tokens, 0),
      outputTokens: reported.reduce((sum, u) => sum + u.output_tokens, 0),
    });
    expect(proxy.attempts, 'requests to anything but the gateway').to.deep.equal([]);
  });
});
