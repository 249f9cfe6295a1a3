/**
 * Claude Code (`claude -p`, pinned in the client matrix) through cloud targets, its experimental betas
 * on (no CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS): the fake of each cloud refuses any beta flag the
 * cloud does not offer with the cloud's 400, so a run that passes had the gateway drop them. Several
 * turns with a tool through a cloud-only pool, and a pool where the cloud answers 429. The key's ledger
 * equals what the fakes reported. Foundry now; Bedrock and Vertex add their fakes to CLOUDS.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { createAgentUpstream, lastToolResults, TEXT_PIECES, type ReportedUsage } from '../../helpers/agent-upstream';
import { claudeEnv, runClaude } from '../../helpers/claude-cli';
import { startRefusingProxy } from '../../helpers/client-matrix';
import { startFakeFoundry, type FakeFoundry } from '../../helpers/fake-foundry';
import { startFakeUpstream, type FakeUpstream } from '../../helpers/fake-upstream';
import { KEYS } from '../../helpers/gateway';
import { startPoolGateway, TARGET_SECRETS, type PoolGateway, type PoolTarget } from '../../helpers/pool-gateway';
import { tempDir } from '../../helpers/temp-dir';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const CATALOGUE: string[] = require('../../../../config.json').models.map((model: { id: string }) => model.id);
const modelIds = Object.fromEntries(CATALOGUE.map((id) => [id, `deploy-${id.replace(/\./g, '-')}`]));

describe('clients: Claude Code through cloud targets (Foundry)', function () {
  this.timeout(180_000);
  const agent = createAgentUpstream();
  const firstAgent = createAgentUpstream();
  let foundry: FakeFoundry;
  let firstParty: FakeUpstream;
  let proxy: Awaited<ReturnType<typeof startRefusingProxy>>;
  let home: string;
  const foundryTarget = (): PoolTarget => ({ id: 'foundry', provider: 'foundry', url: foundry.endpoint, apiKeyEnv: 'POOL_KEY_B', modelIds } as PoolTarget);

  before(async () => {
    foundry = await startFakeFoundry({ apiKey: TARGET_SECRETS.POOL_KEY_B, deployments: Object.values(modelIds), handler: agent.handler });
    firstParty = await startFakeUpstream(firstAgent.handler);
    proxy = await startRefusingProxy();
    home = tempDir('claude-code-clouds-home-');
  });
  after(async () => Promise.all([foundry?.close(), firstParty?.close(), proxy?.close()]));

  const run = async (gw: PoolGateway, args: string[]) => {
    const result = await runClaude(args, home, claudeEnv(home, { ANTHROPIC_BASE_URL: gw.url, ANTHROPIC_API_KEY: KEYS.all }, proxy.url));
    expect(result.code, `claude exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`).to.equal(0);
    return result.stdout;
  };
  const ledgerOf = (reported: ReportedUsage[]) => ({
    requests: reported.length,
    inputTokens: reported.reduce((sum, u) => sum + u.input_tokens, 0),
    outputTokens: reported.reduce((sum, u) => sum + u.output_tokens, 0),
  });

  it('runs several turns with a tool through a Foundry-only pool, its betas dropped, billed as reported', async () => {
    const gw = await startPoolGateway([foundryTarget()]);
    try {
      const file = path.join(home, 'cloud-note.txt');
      const marker = `cloud-tool-${process.pid}-${Date.now()}`;
      fs.writeFileSync(file, `${marker}\n`);
      agent.setScript({ chooseTool: (offered) => (offered.includes('Read') ? { name: 'Read', input: { file_path: file } } : null) });
      const session = crypto.randomUUID();
      const first = await run(gw, ['-p', 'read cloud-note.txt', '--allowedTools', 'Read', '--session-id', session]);
      expect(first).to.include(marker);
      agent.setScript({});
      const second = await run(gw, ['-p', 'again', '--resume', session]);
      expect(second.trim()).to.equal(TEXT_PIECES.join(''));
      const sent = foundry.accepted.filter((r) => r.url.split('?')[0] === '/v1/messages');
      expect(sent.length).to.be.at.least(3);
      expect(lastToolResults(sent.find((r) => lastToolResults(r.body).length > 0)!.body)[0].is_error ?? false).to.equal(false);
      // The model went as the deployment's name; no flag Foundry refuses reached it.
      expect(sent.every((r) => Object.values(modelIds).includes(r.body.model))).to.equal(true);
      expect(sent.some((r) => String(r.headers['anthropic-beta'] ?? '').includes('claude-code-20250219'))).to.equal(false);
      expect(await gw.ledger()).to.deep.equal(ledgerOf(agent.reported));
    } finally {
      await gw.close();
    }
  });

  it('moves Claude Code\'s requests to the first-party target while the cloud answers 429', async () => {
    const gw = await startPoolGateway([{ id: 'first-party', url: firstParty.url }, { ...foundryTarget(), weight: 5 }]);
    const cloudBefore = agent.reported.length;
    foundry.setHandler(() => ({ kind: 'json', status: 429, body: { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached for this deployment' } } }));
    try {
      const stdout = await run(gw, ['-p', 'hello']);
      expect(stdout.trim()).to.equal(TEXT_PIECES.join(''));
      expect(agent.reported.length).to.equal(cloudBefore);
      expect(firstAgent.reported.length).to.be.at.least(1);
      expect(await gw.ledger()).to.deep.equal(ledgerOf(firstAgent.reported));
      expect(proxy.attempts, 'requests to anything but the gateway').to.deep.equal([]);
    } finally {
      foundry.setHandler(agent.handler);
      await gw.close();
    }
  });
});
