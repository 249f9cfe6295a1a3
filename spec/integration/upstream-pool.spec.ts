/**
 * The upstream pool against real faults: several fake upstreams on loopback behind one gateway, driven
 * by the official native SDK (maxRetries 0, so every failure the client would see shows). One target
 * answers 529 or 429 with `retry-after`, refuses connections, stalls before its first byte, or dies
 * mid-stream; requests must fail over before the first byte only, be billed once, and follow weights
 * and sessions.
 *
 * The fakes' error replies are the provider's: 529 `overloaded_error` and 429 `rate_limit_error` with
 * `retry-after` (https://docs.anthropic.com/en/api/errors, https://docs.anthropic.com/en/api/rate-limits:
 * "a retry-after header indicating how long to wait"); a chat-completions upstream's 503 is OpenAI's
 * "The engine is currently overloaded" (https://platform.openai.com/docs/guides/error-codes).
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { chatHandler } from '../helpers/fake-chat';
import { nativeMessage, nativeTextEvents, startFakeUpstream, type FakeHandler, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS } from '../helpers/gateway';
import { parseSseText, rawRequest, nativeHeaders } from '../helpers/http-client';
import { startPoolGateway, runConcurrently, TARGET_SECRETS, type PoolGateway } from '../helpers/pool-gateway';
import { freePort } from '../helpers/ports';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const overloaded: FakeHandler = () => ({ kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
const rateLimited = (seconds: number): FakeHandler => () => ({
  kind: 'json', status: 429, headers: { 'retry-after': String(seconds) }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'rate limited' } },
});
const USAGE = { input_tokens: 10, output_tokens: 5 };

describe('upstream pool: several targets, failover, health and session affinity', function () {
  this.timeout(60_000);
  const started: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((item) => item.close()));
  });

  async function fakes(...handlers: Array<FakeHandler | undefined>): Promise<FakeUpstream[]> {
    const list = await Promise.all(handlers.map((handler) => startFakeUpstream(handler)));
    started.push(...list);
    return list;
  }
  async function gateway(...args: Parameters<typeof startPoolGateway>): Promise<PoolGateway> {
    const gw = await startPoolGateway(...args);
    started.unshift(gw);
    return gw;
  }
  const sdk = (gw: PoolGateway, headers: Record<string, string> = {}) => new Anthropic({ apiKey: KEYS.all, baseURL: gw.url, maxRetries: 0, defaultHeaders: headers });
  const ask = (client: Anthropic) => client.messages.create({ model: 'model-sonnet-4.6', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });

  it('serves 200 requests while one of two targets answers 529 to everything, each billed once, the failing one tried once per breaker cooldown', async () => {
    const [bad, good] = await fakes(overloaded, undefined);
    const gw = await gateway([{ id: 'bad', url: bad.url }, { id: 'good', url: good.url }], { breakerThreshold: 3, breakerCooldownMs: 250 });
    const client = sdk(gw);
    const startedAt = Date.now();
    const replies = await runConcurrently(200, 8, () => ask(client));
    const elapsedMs = Date.now() - startedAt;
    expect(replies.every((reply) => reply.content[0].type === 'text')).to.equal(true);
    expect(good.requests).to.have.length(200);
    // Until the breaker opens, up to one attempt per request in flight; then one trial per cooldown.
    expect(bad.requests.length).to.be.at.most(3 + 8 + Math.ceil(elapsedMs / 250) + 1);
    expect(await gw.ledger()).to.deep.equal({ requests: 200, inputTokens: 200 * USAGE.input_tokens, outputTokens: 200 * USAGE.output_tokens });
    const status = await (await fetch(`${gw.url}/health`)).json() as any;
    expect(status.upstream.keyGroups[0].targets.map((t: any) => t.id)).to.deep.equal(['bad', 'good']);
    expect(['breaker_open', 'half_open']).to.include(status.upstream.keyGroups[0].targets[0].state);
  });

  it('keeps a target answering 429 with retry-after out for that long, and each request pays no failed attempt on it meanwhile', async () => {
    const [limited, good] = await fakes(rateLimited(60), undefined);
    const gw = await gateway([{ id: 'limited', url: limited.url }, { id: 'good', url: good.url }]);
    const client = sdk(gw);
    for (let i = 0; i < 30; i++) await ask(client);
    expect(limited.requests).to.have.length(1);
    expect(good.requests).to.have.length(30);
    const admin = gw.running.gateway.upstreams.describe(gw.running.gateway.config.keyGroups)[0].targets[0];
    expect(admin).to.deep.include({ id: 'limited', state: 'cooling_down', requests: 1, failures: 1, failovers: 1 });
  });

  it('routes around a target refusing connections without a client error, and sends it traffic again after its cooldown', async () => {
    const port = await freePort();
    const [good] = await fakes(undefined);
    const gw = await gateway([{ id: 'down', url: `http://127.0.0.1:${port}` }, { id: 'good', url: good.url }], { breakerThreshold: 1, breakerCooldownMs: 200 });
    const client = sdk(gw);
    for (let i = 0; i < 20; i++) await ask(client);
    expect(good.requests).to.have.length(20);
    const revived = await startFakeOnPort(port);
    started.push(revived);
    let sent = 0;
    while (revived.requests.length === 0 && sent < 200) {
      await ask(client);
      sent++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(revived.requests.length, 'the revived target takes traffic again').to.be.greaterThan(0);
    // Once its trial succeeded, it takes its share (1:1) again.
    const before = revived.requests.length;
    for (let i = 0; i < 10; i++) await ask(client);
    expect(revived.requests.length - before).to.equal(5);
  });

  it('runs a request once when its target stalls the head past the head timeout while it runs it: 504, no other target, billed at the hold', async () => {
    // The first two requests on `slow` run (their replies are made) but their heads come after the head timeout.
    let calls = 0;
    const [slow, good] = await fakes(
      (request) => ({ kind: 'json', body: nativeMessage('late', USAGE, request.body.model), delayMs: calls++ < 2 ? 1500 : 0 }),
      undefined,
    );
    const gw = await gateway([{ id: 'slow', url: slow.url, weight: 100 }, { id: 'good', url: good.url }], { timeoutMs: 300 });
    const error = await ask(sdk(gw)).catch((err) => err);
    expect(error).to.be.instanceOf(Anthropic.APIError);
    expect(error.status).to.equal(504);
    expect(slow.requests).to.have.length(1);
    expect(good.requests, 'never sent to a second target').to.have.length(0);
    // No usage came back, but the upstream may bill it: the hold is billed, with a line saying so.
    const month = new Date().toISOString().slice(0, 7);
    await gw.ledger();
    const spent = await gw.running.store.getMonthSpend('team-all', month);
    const held = gw.logLines.find((l) => l.message.startsWith('billed at the hold'));
    expect(held?.credits).to.be.greaterThan(0);
    expect(spent).to.equal(held!.credits);
    // The SDK's own retry of a 504 (maxRetries) is another request of the client's, each run once.
    const retried = await new Anthropic({ apiKey: KEYS.all, baseURL: gw.url, maxRetries: 1 }).messages.create({
      model: 'model-sonnet-4.6', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }],
    });
    expect(retried.content[0]).to.deep.include({ type: 'text', text: 'late' });
    expect(slow.requests).to.have.length(3);
    expect(good.requests).to.have.length(0);
  });

  it('splits 400 requests 3:1 by weight; keeps a session on one target, and moves it for good when that target fails', async () => {
    const [a, b] = await fakes(undefined, undefined);
    const gw = await gateway([{ id: 'a', url: a.url, weight: 3 }, { id: 'b', url: b.url, weight: 1, apiKeyEnv: 'POOL_KEY_B' }]);
    const client = sdk(gw);
    await runConcurrently(400, 4, () => ask(client));
    expect(a.requests.length / b.requests.length).to.be.within(2.7, 3.3);
    expect(a.requests[0].headers['x-api-key']).to.equal(TARGET_SECRETS.POOL_KEY_A);
    expect(b.requests[0].headers['x-api-key']).to.equal(TARGET_SECRETS.POOL_KEY_B);

    const session = sdk(gw, { 'x-claude-code-session-id': '3f1c2d4e-aaaa-bbbb-cccc-0123456789ab' });
    const counts = () => [a.requests.length, b.requests.length];
    const start = counts();
    for (let i = 0; i < 20; i++) await ask(session);
    const grew = counts().map((n, i) => n - start[i]);
    expect([...grew].sort((x, y) => x - y)).to.deep.equal([0, 20]);
    const [home, other] = grew[0] === 20 ? [a, b] : [b, a];
    home.setHandler(overloaded);
    const mark = [home.requests.length, other.requests.length];
    for (let i = 0; i < 20; i++) await ask(session);
    expect(other.requests.length - mark[1]).to.equal(20);
    expect(home.requests.length - mark[0], 'one failed attempt, then the session moved').to.equal(1);
    // The old target recovers: the session stays where it moved.
    home.setHandler((request) => ({ kind: 'json', body: { ...nativeMessageOf(request.body.model) } }));
    const again = other.requests.length;
    for (let i = 0; i < 5; i++) await ask(session);
    expect(other.requests.length - again).to.equal(5);
  });

  it('keeps a Responses chain (previous_response_id) on the target of its first response', async () => {
    const [a, b] = await fakes(undefined, undefined);
    const gw = await gateway([{ id: 'a', url: a.url }, { id: 'b', url: b.url }]);
    const client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    for (let chain = 0; chain < 2; chain++) {
      const before = [a.requests.length, b.requests.length];
      let previous = (await client.responses.create({ model: 'sonnet', input: 'hi' })).id;
      for (let turn = 0; turn < 4; turn++) {
        previous = (await client.responses.create({ model: 'sonnet', input: 'again', previous_response_id: previous })).id;
      }
      const grew = [a.requests.length - before[0], b.requests.length - before[1]];
      expect([...grew].sort(), `chain ${chain}: every turn on one target`).to.deep.equal([0, 5]);
    }
  });

  it('fails a stream over before its first byte, never after it, and bills what the upstreams reported', async () => {
    const [flaky, good] = await fakes(overloaded, undefined);
    const gw = await gateway([{ id: 'flaky', url: flaky.url }, { id: 'good', url: good.url }], { breakerThreshold: 100 });
    const client = sdk(gw);
    for (let i = 0; i < 4; i++) {
      const stream = client.messages.stream({ model: 'model-sonnet-4.6', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] });
      expect(await stream.finalText()).to.equal('Hello, world');
    }
    expect(good.requests).to.have.length(4);

    // Now the first target dies mid-stream: the client gets an error event, and no other target is asked.
    const dying: FakeHandler = (request) => ({
      kind: 'stream', events: [...nativeTextEvents(['Hel', 'lo'], USAGE, request.body.model).slice(0, 4), { pauseMs: 50 }], destroyAtEnd: true,
    });
    flaky.setHandler(dying);
    good.setHandler(dying);
    const before = flaky.requests.length + good.requests.length;
    const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: { model: 'sonnet', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] } });
    expect(reply.status).to.equal(200);
    const events = parseSseText(reply.text);
    expect(events[events.length - 1].event).to.equal('error');
    expect(flaky.requests.length + good.requests.length - before, 'no failover after the first byte').to.equal(1);
    const ledger = await gw.ledger();
    expect(ledger.requests).to.equal(5);
    expect(ledger.inputTokens).to.equal(5 * USAGE.input_tokens);
  });

  it('two gateway instances on one Redis under load: every request served, each billed once, each instance finds the failing target itself', async () => {
    const [bad, good] = await fakes(overloaded, undefined);
    const prefix = uniqueRedisPrefix('pool');
    const targets = [{ id: 'bad', url: bad.url }, { id: 'good', url: good.url }];
    const settings = { breakerThreshold: 3, breakerCooldownMs: 60_000 };
    const first = await gateway(targets, settings, await connectTestRedisStore(prefix));
    const second = await gateway(targets, settings, await connectTestRedisStore(prefix));
    started.push({ close: () => deleteRedisPrefix(prefix) });
    expect(first.running.store.kind).to.equal('redis');
    const [one, two] = [sdk(first), sdk(second)];
    const replies = await runConcurrently(300, 16, (i) => ask(i % 2 === 0 ? one : two));
    expect(replies).to.have.length(300);
    expect(good.requests).to.have.length(300);
    // Per instance: attempts until its breaker opens (at most its requests in flight past the threshold), then none.
    expect(bad.requests.length).to.be.at.most(2 * (3 + 8));
    await second.ledger();
    expect(await first.ledger()).to.deep.equal({ requests: 300, inputTokens: 300 * USAGE.input_tokens, outputTokens: 300 * USAGE.output_tokens });
  });

  it('fails over between the targets of a chat-completions key group, each sent its own bearer credential; the admin API shows them', async () => {
    const native = await fakes(undefined);
    const [busy, calm] = await fakes(() => ({ kind: 'json', status: 503, body: { error: { message: 'busy', type: 'server_error' } } }), chatHandler);
    const gw = await gateway([{ id: 'main', url: native[0].url }], {}, undefined, {
      env: { ADMIN_TOKEN: 'admin-token-pool-0123456789abcdef' },
      overrides: {
        models: [...require('../../../config.json').models, { id: 'fam-5', upstreamModel: 'fam-large', pricing: { inputPerMillion: 2, outputPerMillion: 8 } }],
        keyGroups: [{
          id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'],
          upstream: { kind: 'chat-completions', targets: [{ id: 'busy', url: busy.url, apiKeyEnv: 'POOL_KEY_A' }, { id: 'calm', url: calm.url, apiKeyEnv: 'POOL_KEY_B' }] },
        }],
        keys: [{ id: 'family-team', key: 'sk-fam-test-family-key-0001', rateLimitPerMinute: 100000 }],
      },
    });
    for (let i = 0; i < 3; i++) {
      const reply = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST', headers: { authorization: 'Bearer sk-fam-test-family-key-0001', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fam-5', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(reply.status).to.equal(200);
    }
    expect(busy.requests[0].headers.authorization).to.equal(`Bearer ${TARGET_SECRETS.POOL_KEY_A}`);
    expect(calm.requests).to.have.length(3);
    expect(calm.requests[0].headers.authorization).to.equal(`Bearer ${TARGET_SECRETS.POOL_KEY_B}`);
    const admin = await (await fetch(`${gw.url}/admin/v1/upstreams`, { headers: { authorization: 'Bearer admin-token-pool-0123456789abcdef' } })).json() as any;
    const family = admin.data.find((group: any) => group.keyGroup === 'family');
    expect(family.upstream).to.equal('family');
    expect(family.targets.map((t: any) => [t.id, t.requests])).to.deep.equal([['busy', busy.requests.length], ['calm', 3]]);
    expect(family.targets[0].failures).to.equal(busy.requests.length);
    expect(JSON.stringify(admin)).to.not.include(TARGET_SECRETS.POOL_KEY_A);
  });

  it('names the serving target in the log line, the request log and the metrics', async () => {
    const [bad, good] = await fakes(overloaded, undefined);
    const gw = await gateway([{ id: 'bad', url: bad.url }, { id: 'good', url: good.url }]);
    await ask(sdk(gw));
    await ask(sdk(gw));
    await gw.ledger();
    const logged = await gw.running.store.readRequestLog(0, Date.now() + 1000, null, 100);
    expect(logged.records.map((record) => record.upstreamTarget)).to.deep.equal(['good', 'good']);
    expect(gw.logLines.filter((line) => line.upstream_target).map((line) => line.upstream_target)).to.deep.equal(['good', 'good']);
    const text = await gw.running.gateway.metrics.registry.metrics();
    expect(text).to.include('gateway_upstream_target_requests_total{upstream="default",target="good"} 2');
    expect(text).to.include('gateway_upstream_target_failures_total{upstream="default",target="bad"} 1');
    expect(text).to.include('gateway_upstream_target_failovers_total{upstream="default",target="bad"} 1');
  });
});

function nativeMessageOf(model: string) {
  return { id: 'msg_1', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: USAGE };
}

/** A fake upstream on a given port (a target that was down comes back). */
async function startFakeOnPort(port: number): Promise<{ requests: string[]; close(): Promise<void> }> {
  const http = await import('node:http');
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(nativeMessageOf('model-sonnet-4.6')));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { requests, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}
