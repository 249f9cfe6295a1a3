/**
 * Session affinity with Codex (`codex exec`, pinned in package.json) through the Responses route and
 * an upstream pool of two targets. Codex names its conversation in the `session_id` header and the
 * body's `prompt_cache_key` (codex-rs, codex-api/src/requests/headers.rs); the turns of one run (the
 * tool call, then its result) must reach one target, where the prompt cache of the first turn is
 * (without a session they would alternate between the two targets).
 */
import { expect } from 'chai';
import { codexExec } from '../../helpers/codex-cli';
import { startFakeUpstream, type FakeUpstream } from '../../helpers/fake-upstream';
import { startPoolGateway, type PoolGateway } from '../../helpers/pool-gateway';
import { roundTripHandler } from '../../helpers/responses-upstream';

describe('clients: Codex sessions over an upstream pool', function () {
  this.timeout(120_000);
  let fakes: FakeUpstream[];
  let gw: PoolGateway;
  const handler = roundTripHandler({ toolName: 'exec_command', toolInput: { cmd: 'echo pool-$((6*7))' }, answer: 'The command printed pool-42.' });

  before(async () => {
    fakes = await Promise.all([startFakeUpstream(handler), startFakeUpstream(handler)]);
    gw = await startPoolGateway([{ id: 'a', url: fakes[0].url }, { id: 'b', url: fakes[1].url, apiKeyEnv: 'POOL_KEY_B' }]);
  });
  after(async () => Promise.all([gw?.close(), ...(fakes ?? []).map((fake) => fake.close())]));

  it('sends every turn of one codex exec run to the same target', async () => {
    for (let run = 0; run < 2; run++) {
      const before = fakes.map((fake) => fake.requests.length);
      const result = await codexExec(gw, 'Run the echo command');
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout.trim()).to.equal('The command printed pool-42.');
      const grew = fakes.map((fake, i) => fake.requests.length - before[i]);
      expect([...grew].sort(), `run ${run}: both turns on one target`).to.deep.equal([0, 2]);
      // Without a session the two turns would alternate (weights 1:1, smooth round-robin).
      const served = gw.logLines.filter((line) => line.message === 'request' && line.upstream_target).slice(-2).map((line) => line.upstream_target);
      expect(served).to.deep.equal(grew[0] === 2 ? ['a', 'a'] : ['b', 'b']);
    }
  });
});
