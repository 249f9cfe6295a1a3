/**
 * A stream that lasts longer than its hold's expiry (the upstream timeout) keeps its credits held
 * until it settles, so a second request cannot spend the same room under the cap meanwhile.
 */
import { expect } from 'chai';
import { nativeTextEvents } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';

const CAPPED = 'sk-cs4-test-long-stream-cap-0001';

describe('integration: credit hold of a long stream', function () {
  this.timeout(30_000);
  let t: TestGateway;
  before(async () => {
    const events = nativeTextEvents(['a', 'b', 'c', 'd', 'e', 'f'], { input_tokens: 10, output_tokens: 5 }, 'model-haiku-4.5');
    t = await startTestGateway({
      // Holds expire after upstream.timeoutMs (2 s here) unless renewed; the stream below lasts ~3 s.
      upstreamTimeoutMs: 2000,
      overrides: { keys: [{ id: 'capped', key: CAPPED, rateLimitPerMinute: 1000, monthlyCreditCap: 0.01 }] },
      handler: (request) => request.body.stream
        ? { kind: 'stream', events: [events[0], events[1], ...events.slice(2, 8).flatMap((e) => [{ pauseMs: 500 }, e]), ...events.slice(8)] }
        : { kind: 'json', body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'model-haiku-4.5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 5 } } },
    });
  });
  after(async () => t.close());

  const ask = (stream: boolean) => fetch(`${t.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': CAPPED, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    // Worst case of one request: about 0.0072 credits of the 0.01 cap, so only one fits whole at a time
    // (a second gets its max_tokens cut to the credit left beside the first one's hold).
    body: JSON.stringify({ model: 'haiku', max_tokens: 1000, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });

  it('cuts a second request while the first streams past its hold expiry, and admits it whole once the first settled', async () => {
    const first = await ask(true);
    expect(first.status).to.equal(200);
    const firstBody = first.text();
    await new Promise((resolve) => setTimeout(resolve, 2600));
    const during = await ask(false);
    expect(during.status).to.equal(200);
    expect(Number(during.headers.get('x-gateway-max-tokens')), 'the first hold must still count after 2.6 s').to.be.below(1000);
    expect(await firstBody).to.include('event: message_stop');
    let after = await ask(false);
    for (let i = 0; i < 20 && after.headers.get('x-gateway-max-tokens') !== null; i++) {
      // The first request settles when its response closes, just after its last byte.
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await ask(false);
    }
    expect(after.status).to.equal(200);
    expect(after.headers.get('x-gateway-max-tokens')).to.equal(null);
  });
});
