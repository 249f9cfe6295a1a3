/**
 * A reload applies what it says it reloaded, or refuses: a file that drops the upstream (no `url`, no
 * `targets`) would leave the key groups no client to send with (every request would fail), since the
 * embedded simulated upstream starts only at start-up; the reload is refused, named, and requests go on.
 */
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { startGateway, type RunningGateway } from '../../lib/server';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createCapturingLogger, KEYS, testConfigObject, UPSTREAM_SECRET } from '../helpers/gateway';
import { nativeHeaders } from '../helpers/http-client';

describe('reload: an upstream cannot be removed without a restart', function () {
  let upstream: FakeUpstream | undefined;
  let running: RunningGateway | undefined;
  after(async () => {
    await running?.close();
    await upstream?.close();
  });

  it('refuses the reload with a log line naming upstream, and keeps serving from the upstream in force', async () => {
    upstream = await startFakeUpstream();
    process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
    let url: string | null = upstream.url;
    const load = () => parseConfig(testConfigObject(url as string, {}, url === null ? { url: null } : {}), { PORT: '0' });
    const { logger, lines } = createCapturingLogger();
    running = await startGateway({ config: load(), loadConfig: load, logger, host: '127.0.0.1', requestScope: false });
    url = null;
    const result = await running.gateway.reload();
    expect(result).to.deep.include({ ok: false });
    expect(lines.find((line) => line.message === 'configuration reload refused; the current configuration stays')?.reason).to.match(/upstream: a reload cannot remove the upstream/);
    const reply = await fetch(`${running.url}/v1/messages`, {
      method: 'POST', headers: { ...Object.fromEntries(nativeHeaders()), 'x-api-key': KEYS.all },
      body: JSON.stringify({ model: 'model-sonnet-4.6', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(reply.status).to.equal(200);
    expect(upstream.requests).to.have.length(1);
  });
});

describe('reload: /health asks the upstream in force', function () {
  let upstream: FakeUpstream | undefined;
  let running: RunningGateway | undefined;
  after(async () => {
    await running?.close();
    await upstream?.close();
  });

  it('reports the new upstream unreachable at once after a reload moved the targets to a closed port', async () => {
    upstream = await startFakeUpstream();
    process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
    let url = upstream.url;
    const load = () => parseConfig(testConfigObject(url, {}), { PORT: '0' });
    running = await startGateway({ config: load(), loadConfig: load, logger: createCapturingLogger().logger, host: '127.0.0.1', requestScope: false });
    const before = await (await fetch(`${running.url}/health`)).json() as { upstream: { reachable: boolean } };
    expect(before.upstream.reachable).to.equal(true);
    // Port 9 (discard) on loopback: nothing listens there, so a connection is refused at once.
    url = 'http://127.0.0.1:9';
    expect(await running.gateway.reload()).to.deep.include({ ok: true });
    const after = await fetch(`${running.url}/health`);
    expect(after.status).to.equal(503);
    expect((await after.json() as { upstream: { reachable: boolean } }).upstream.reachable).to.equal(false);
  });
});
