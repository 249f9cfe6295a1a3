/**
 * Why a request failed, where the operator looks: the log line and the request log record of a
 * refusal (402, 403, 429 of an identified key) and of an upstream failure carry the error's type and
 * message, and an upstream failure its attempt chain, each attempt with the upstream's own error type
 * and message, credentials redacted. A relayed upstream error keeps the upstream's reason phrase.
 *
 * The fakes' errors are the provider's: 529 `overloaded_error` (https://docs.anthropic.com/en/api/errors);
 * the "connection refused" target is a loopback port nothing listens on.
 */
import http from 'node:http';
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { waitForAfterResponseSteps } from '../../lib/app';
import type { RequestLogRecord } from '../../lib/store/types';
import { startFakeUpstream, type FakeHandler, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { startPoolGateway, TARGET_SECRETS, type PoolGateway } from '../helpers/pool-gateway';
import { freePort } from '../helpers/ports';

/** A 529 whose message quotes the target's credential back (an upstream may): it must be redacted. */
const overloaded: FakeHandler = () => ({
  kind: 'json', status: 529, statusText: 'Overloaded',
  body: { type: 'error', error: { type: 'overloaded_error', message: `Overloaded (account ${TARGET_SECRETS.POOL_KEY_A})` } },
});

const CAPPED = 'sk-cs4-test-capped-key-0009';
const ONE_PER_MINUTE = 'sk-cs4-test-one-per-minute-0010';

/** The request log records and `request` log lines written so far (after the finish steps). */
async function readReasons(gw: { running?: PoolGateway['running']; gateway?: TestGateway['gateway']; logLines: Array<Record<string, any>> }) {
  const running = gw.running ?? gw.gateway!;
  await waitForAfterResponseSteps(running.gateway.router);
  const page = await running.store.readRequestLog(0, Date.now() + 60_000, null, 100);
  return { records: page.records as RequestLogRecord[], lines: gw.logLines.filter((line) => line.message === 'request') };
}

/** POST /v1/messages with the test key; the status, reason phrase and body as text. */
function postMessage(url: string, key = KEYS.all, model = 'model-sonnet-4.6'): Promise<{ status: number; statusText: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, statusText: res.statusMessage ?? '', text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ model, max_tokens: 20, messages: [{ role: 'user', content: 'a prompt the log must never show' }] }));
  });
}

describe('why a request failed: the log line and the request log record', function () {
  this.timeout(30_000);
  const started: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((item) => item.close()));
  });
  async function fake(handler: FakeHandler): Promise<FakeUpstream> {
    const upstream = await startFakeUpstream(handler);
    started.push(upstream);
    return upstream;
  }

  it('shows both attempts of a request failed by two targets (529, then connection refused), with their reasons, never a secret', async () => {
    const busy = await fake(overloaded);
    const refused = `http://127.0.0.1:${await freePort()}`;
    const gw = await startPoolGateway([{ id: 'a', url: busy.url }, { id: 'b', url: refused }], { maxRetries: 0 });
    started.unshift(gw);
    const client = new Anthropic({ apiKey: KEYS.all, baseURL: gw.url, maxRetries: 0 });
    const failure = await client.messages.create({ model: 'model-sonnet-4.6', max_tokens: 20, messages: [{ role: 'user', content: 'a prompt the log must never show' }] })
      .then(() => undefined, (err: unknown) => err);
    expect(failure).to.be.instanceOf(Anthropic.APIError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).status).to.equal(502);

    const { records, lines } = await readReasons(gw);
    const chain = 'a:529 overloaded_error (Overloaded (account [redacted])) -> b:ECONNREFUSED';
    expect(records).to.have.length(1);
    expect(records[0]).to.deep.include({
      keyId: 'team-all', status: 502, credits: 0, upstreamTarget: null,
      errorType: 'api_error', errorMessage: 'the upstream could not be reached (ECONNREFUSED)', upstreamAttempts: chain,
    });
    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({ status: 502, error_type: 'api_error', error_message: 'the upstream could not be reached (ECONNREFUSED)', upstream_attempts: chain });
    const everything = JSON.stringify([records, gw.logLines]);
    expect(everything).to.not.include(TARGET_SECRETS.POOL_KEY_A);
    expect(everything).to.not.include('a prompt the log must never show');
  });

  it('relays the last 529 with the upstream\'s reason phrase and logs a:529 -> b:529, each with the upstream\'s error', async () => {
    const first = await fake(overloaded);
    const second = await fake(overloaded);
    const gw = await startPoolGateway([{ id: 'a', url: first.url }, { id: 'b', url: second.url }], { maxRetries: 0 });
    started.unshift(gw);
    const reply = await postMessage(gw.url);
    expect(reply.status).to.equal(529);
    // Node knows no reason phrase for 529: without the upstream's the client read `529 unknown`.
    expect(reply.statusText).to.equal('Overloaded');
    expect(JSON.parse(reply.text).error).to.deep.equal({ type: 'overloaded_error', message: 'Overloaded (account [redacted])' });

    const { records, lines } = await readReasons(gw);
    const chain = 'a:529 overloaded_error (Overloaded (account [redacted])) -> b:529 overloaded_error (Overloaded (account [redacted]))';
    expect(records[0]).to.deep.include({ status: 529, upstreamTarget: 'b', errorType: 'overloaded_error', errorMessage: 'Overloaded (account [redacted])', upstreamAttempts: chain });
    expect(lines[0]).to.deep.include({ status: 529, upstream_target: 'b', error_type: 'overloaded_error', upstream_attempts: chain });
  });

  it('records nothing of the kind for a request the first attempt serves', async () => {
    const good = await fake(() => ({ kind: 'json', body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'model-sonnet-4.6', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } } }));
    const gw = await startPoolGateway([{ id: 'a', url: good.url }]);
    started.unshift(gw);
    expect((await postMessage(gw.url)).status).to.equal(200);
    const { records, lines } = await readReasons(gw);
    expect(records[0]).to.deep.include({ status: 200, errorType: null, errorMessage: null, upstreamAttempts: null });
    expect(lines[0]).to.not.have.any.keys('error_type', 'error_message', 'upstream_attempts');
  });

  it('gives a refusal of an identified key (402, 403, 429) a record with 0 credits and its error type and message; an unknown key none', async () => {
    const gw = await startTestGateway({
      overrides: {
        keys: [
          { id: 'team-haiku', key: KEYS.haikuOnly, allowedModels: ['model-haiku-4.5'], rateLimitPerMinute: 100000 },
          { id: 'capped', key: CAPPED, monthlyCreditCap: 0, rateLimitPerMinute: 100000 },
          { id: 'one-per-minute', key: ONE_PER_MINUTE, rateLimitPerMinute: 1 },
        ],
      },
    });
    started.unshift(gw);
    const forbidden = await postMessage(gw.url, KEYS.haikuOnly);
    const unpaid = await postMessage(gw.url, CAPPED);
    expect((await postMessage(gw.url, ONE_PER_MINUTE)).status).to.equal(200);
    const limited = await postMessage(gw.url, ONE_PER_MINUTE);
    expect((await postMessage(gw.url, 'sk-cs4-no-such-key-000000000')).status).to.equal(401);
    expect([forbidden.status, unpaid.status, limited.status]).to.deep.equal([403, 402, 429]);

    const { records, lines } = await readReasons(gw);
    const refusals = records.filter((record) => record.status >= 400);
    const said = (reply: { text: string }) => JSON.parse(reply.text).error;
    expect(refusals.map((record) => [record.keyId, record.status, record.credits, record.errorType, record.errorMessage])).to.deep.equal([
      ['team-haiku', 403, 0, 'permission_error', said(forbidden).message],
      ['capped', 402, 0, 'billing_error', said(unpaid).message],
      ['one-per-minute', 429, 0, 'rate_limit_error', said(limited).message],
    ]);
    expect(refusals.every((record) => record.upstreamAttempts === null && record.model !== undefined)).to.equal(true);
    expect(gw.upstream.requests).to.have.length(1);
    const refusedLines = lines.filter((line) => line.status >= 400);
    expect(refusedLines.map((line) => [line.status, line.error_type, line.error_message])).to.deep.equal([
      [403, 'permission_error', said(forbidden).message],
      [402, 'billing_error', said(unpaid).message],
      [429, 'rate_limit_error', said(limited).message],
      [401, 'authentication_error', 'invalid API key'],
    ]);
  });

  it('says why a stream failed after its first byte: the upstream\'s error event, or the connection lost', async () => {
    const start = { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'model-sonnet-4.6', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } } };
    const delta = { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Partial' } } };
    let cut = false;
    const gw = await startTestGateway({
      handler: () => (cut
        ? { kind: 'stream', events: [start, delta, { pauseMs: 50 }], destroyAtEnd: true }
        : { kind: 'stream', events: [start, delta, { event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }] }),
    });
    started.unshift(gw);
    const client = new Anthropic({ apiKey: KEYS.all, baseURL: gw.url, maxRetries: 0 });
    const read = async () => {
      const stream = await client.messages.create({ model: 'model-sonnet-4.6', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      try {
        for await (const _event of stream) { /* read to the end or the error */ }
      } catch (err) {
        return err;
      }
      return undefined;
    };
    expect(await read()).to.be.instanceOf(Anthropic.APIError);
    cut = true;
    expect(await read()).to.be.instanceOf(Anthropic.APIError);
    const { records, lines } = await readReasons(gw);
    expect(records.map((record) => [record.status, record.errorType, record.errorMessage])).to.deep.equal([
      [200, 'overloaded_error', 'Overloaded'],
      [200, 'api_error', 'the upstream connection was lost mid-stream'],
    ]);
    expect(lines.map((line) => line.error_type)).to.deep.equal(['overloaded_error', 'api_error']);
  });
});
