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
