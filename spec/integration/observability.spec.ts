/** GET /metrics (Prometheus text, METRICS_TOKEN), request ids on every log line, config reload. */
import { expect } from 'chai';
import { GatewayError, parseConfig } from '../../lib';
import { KEYS, testConfigObject } from '../helpers/gateway';
import { nativeMessage, nativeTextEvents, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { eventually, startLibraryGateway, type LibraryGateway } from '../helpers/library';
import { tempDir } from '../helpers/temp-dir';

const nativeHeaders = { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const post = (url: string, body: unknown) => fetch(`${url}/v1/messages`, { method: 'POST', headers: nativeHeaders, body: JSON.stringify(body) });

/** The value of one series in Prometheus text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('observability', () => {
  let upstream: FakeUpstream;
  let gw: LibraryGateway | undefined;
  before(async () => {
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });
  after(() => upstream.close());

  it('counts requests, latency, tokens, credits and upstream errors by route, status and model', async () => {
    gw = await startLibraryGateway(upstream.url);
    expect((await post(gw.url, { model: 'sonnet', max_tokens: 9, messages: [{ role: 'user', content: 'x' }] })).status).to.equal(200);
    upstream.setHandler(() => ({ kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    expect((await post(gw.url, { model: 'haiku', max_tokens: 9, messages: [{ role: 'user', content: 'x' }] })).status).to.equal(529);
    upstream.setHandler((r) => (r.body.stream ? { kind: 'stream', events: nativeTextEvents(['a']) } : { kind: 'json', body: nativeMessage('a') }));
    await eventually(() => gw!.logLines.filter((l) => l.message === 'request').length === 2);
    const reply = await fetch(`${gw.url}/metrics`);
    expect(reply.status).to.equal(200);
    expect(reply.headers.get('content-type')).to.contain('text/plain');
    const text = await reply.text();
    expect(sample(text, 'gateway_requests_total{route="POST /v1/messages",status="200",model="model-sonnet-4.6"}')).to.equal(1);
    expect(sample(text, 'gateway_requests_total{route="POST /v1/messages",status="529",model="model-haiku-4.5"}')).to.equal(1);
    expect(sample(text, 'gateway_upstream_errors_total{route="POST /v1/messages",model="model-haiku-4.5",reason="status_529"}')).to.equal(1);
    expect(sample(text, 'gateway_tokens_total{model="model-sonnet-4.6",type="input"}')).to.equal(10);
    expect(sample(text, 'gateway_tokens_total{model="model-sonnet-4.6",type="output"}')).to.equal(5);
    expect(sample(text, 'gateway_credits_total{model="model-sonnet-4.6"}')).to.be.closeTo((10 * 3 + 5 * 15) / 1e6, 1e-12);
    expect(sample(text, 'gateway_request_duration_seconds_count{route="POST /v1/messages",model="model-sonnet-4.6"}')).to.equal(1);
    expect(sample(text, 'gateway_time_to_first_byte_seconds_count{route="POST /v1/messages",model="model-sonnet-4.6"}')).to.equal(1);
    expect(text).to.contain('# TYPE gateway_open_streams gauge');
    expect(text).to.contain('gateway_process_cpu_user_seconds_total');
  });

  it('labels series by the route table, so the paths clients send add no series', async () => {
    gw = await startLibraryGateway(upstream.url);
    for (let i = 0; i < 20; i++) expect((await fetch(`${gw.url}/scan/${i}/wp-login.php?x=${i}`)).status).to.equal(404);
    expect((await fetch(`${gw.url}/v1/messages`, { method: 'PUT' })).status).to.equal(405);
    // The router matches paths in any case and with a trailing slash: the same route, the same series.
    const variant = await fetch(`${gw.url}/V1/Messages/`, {
      method: 'POST', headers: nativeHeaders, body: JSON.stringify({ model: 'sonnet', max_tokens: 9, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(variant.status).to.equal(200);
    expect((await post(gw.url, { model: 'sonnet', max_tokens: 9, messages: [{ role: 'user', content: 'x' }] })).status).to.equal(200);
    await eventually(() => gw!.logLines.filter((l) => l.message === 'request').length === 23);
    // The log line keeps the path as sent.
    expect(gw.logLines.filter((l) => l.message === 'request').map((l) => l.route)).to.include('GET /scan/7/wp-login.php');
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const routes = new Set([...text.matchAll(/^gateway_requests_total\{route="([^"]*)"/gm)].map((m) => m[1]));
    expect([...routes].sort()).to.deep.equal(['POST /v1/messages', 'PUT /v1/messages', 'unmatched']);
    expect(sample(text, 'gateway_requests_total{route="unmatched",status="404",model=""}')).to.equal(20);
    expect(sample(text, 'gateway_requests_total{route="POST /v1/messages",status="200",model="model-sonnet-4.6"}')).to.equal(2);
    expect(text).not.to.contain('wp-login');
  });

  it('counts unreachable upstreams and rate-limit / credit-cap refusals', async () => {
    gw = await startLibraryGateway('http://127.0.0.1:9', {
      hooks: {
        beforeUpstream: (_ctx, req) => {
          if (req.body.max_tokens === 1) throw new GatewayError(429, 'rate_limit_error', 'slow down', { chatCode: 'rate_limit_exceeded' });
          if (req.body.max_tokens === 2) throw new GatewayError(402, 'billing_error', 'cap reached', { chatCode: 'credit_cap_exceeded' });
        },
      },
    });
    for (const maxTokens of [1, 2, 3]) await post(gw.url, { model: 'sonnet', max_tokens: maxTokens, messages: [{ role: 'user', content: 'x' }] });
    await eventually(() => gw!.logLines.filter((l) => l.message === 'request').length === 3);
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(sample(text, 'gateway_refusals_total{reason="rate_limit"}')).to.equal(1);
    expect(sample(text, 'gateway_refusals_total{reason="credit_cap"}')).to.equal(1);
    expect(sample(text, 'gateway_upstream_errors_total{route="POST /v1/messages",model="model-sonnet-4.6",reason="unreachable"}')).to.equal(1);
  });

  it('shows open streams while a stream is in progress, and closes them when the client goes away', async () => {
    gw = await startLibraryGateway(upstream.url);
    upstream.setHandler(() => ({ kind: 'stream', events: [...nativeTextEvents(['a']).slice(0, 3), { pauseMs: 10_000 }, ...nativeTextEvents(['b']).slice(3)] }));
    const openStreams = async () => sample(await (await fetch(`${gw!.url}/metrics`)).text(), 'gateway_open_streams');
    expect(await openStreams()).to.equal(0);
    const reply = await post(gw.url, { model: 'sonnet', max_tokens: 9, stream: true, messages: [{ role: 'user', content: 'x' }] });
    const reader = reply.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).to.contain('message_start');
    expect(await openStreams()).to.equal(1);
    await reader.cancel();
    await eventually(() => gw!.logLines.some((l) => l.message === 'request' && l.route === 'POST /v1/messages'));
    expect(await openStreams()).to.equal(0);
    upstream.setHandler((r) => (r.body.stream ? { kind: 'stream', events: nativeTextEvents(['a']) } : { kind: 'json', body: nativeMessage('a') }));
  });

  it('puts /metrics behind METRICS_TOKEN when it is set', async () => {
    gw = await startLibraryGateway(upstream.url, { env: { METRICS_TOKEN: 'scrape-me' } });
    const none = await fetch(`${gw.url}/metrics`);
    expect(none.status).to.equal(401);
    expect(none.headers.get('www-authenticate')).to.contain('Bearer');
    expect((await fetch(`${gw.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).to.equal(401);
    const ok = await fetch(`${gw.url}/metrics`, { headers: { authorization: 'Bearer scrape-me' } });
    expect(ok.status).to.equal(200);
    expect(await ok.text()).to.contain('gateway_requests_total');
  });

  it('leaves the per-key cap usage out of an open /metrics (no METRICS_TOKEN)', async () => {
    gw = await startLibraryGateway(upstream.url, { config: { keys: [{ id: 'capped-key', key: 'sk-cs4-test-capped-metrics-01', monthlyCreditCap: 5 }] } });
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    expect(text).to.contain('gateway_requests_total');
    expect(text).to.not.contain('gateway_key_credit_cap_used_ratio');
    expect(text).to.not.contain('capped-key');
  });

  it('stamps every log line written during a request with its request id', async () => {
    gw = await startLibraryGateway(upstream.url, {
      hooks: { afterAuth: () => void gw!.gateway.logger.warn({ message: 'hook warning' }) },
    });
    upstream.setHandler(() => ({ kind: 'json', body: { ...nativeMessage('a'), stop_reason: 'brand_new_reason' } }));
    const reply = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(reply.status).to.equal(200);
    const id = reply.headers.get('request-id');
    await eventually(() => gw!.logLines.some((l) => l.message === 'request'));
    const warnings = gw.logLines.filter((l) => l.level === 'warn');
    expect(warnings.map((l) => l.message)).to.include('hook warning');
    expect(warnings.some((l) => /stop reason/.test(l.message))).to.equal(true);
    for (const line of warnings) expect(line.request_id, line.message).to.equal(id);
    upstream.setHandler((r) => (r.body.stream ? { kind: 'stream', events: nativeTextEvents(['a']) } : { kind: 'json', body: nativeMessage('a') }));
  });

  describe('config reload', () => {
    let configFile: Record<string, unknown>;
    beforeEach(async () => {
      configFile = testConfigObject(upstream.url);
      const fs = await import('node:fs');
      const path = await import('node:path');
      const dir = tempDir('gw-reload-');
      const file = path.join(dir, 'config.json');
      const write = () => fs.writeFileSync(file, JSON.stringify(configFile));
      write();
      gw = await startLibraryGateway(upstream.url, { configFile: file, config: {} });
      (gw as any).write = write;
    });

    it('applies a valid catalogue change and refuses an invalid one, keeping the old', async () => {
      const write = (gw as any).write as () => void;
      configFile.aliases = { ...(configFile.aliases as object), quick: 'model-haiku-4.5' };
      write();
      const applied = await gw!.gateway.reload();
      expect(applied).to.deep.include({ ok: true, reloaded: ['aliases'] });
      expect((await post(gw!.url, { model: 'quick', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })).status).to.equal(200);

      configFile.aliases = { broken: 'model-nope' };
      write();
      const refused = await gw!.gateway.reload();
      expect(refused.ok).to.equal(false);
      const line = gw!.logLines.find((l) => l.message === 'configuration reload refused; the current configuration stays');
      expect(line?.reason).to.contain('aliases.broken');
      expect((await post(gw!.url, { model: 'quick', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })).status).to.equal(200);
      expect(gw!.gateway.config.aliases).to.have.property('quick');
    });

    it('lets a stream in progress finish on the old catalogue', async () => {
      const write = (gw as any).write as () => void;
      upstream.setHandler(() => ({ kind: 'stream', events: [...nativeTextEvents(['one']).slice(0, 4), { pauseMs: 300 }, ...nativeTextEvents(['two']).slice(3)] }));
      const reply = await post(gw!.url, { model: 'model-sonnet-4.6', max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'x' }] });
      const reader = reply.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      expect(first).to.contain('message_start');
      configFile.models = (configFile.models as Array<{ id: string }>).filter((m) => m.id !== 'model-sonnet-4.6');
      configFile.aliases = {};
      write();
      const result = await gw!.gateway.reload();
      expect(result, JSON.stringify(result)).to.deep.include({ ok: true });
      let rest = first;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        rest += new TextDecoder().decode(value);
      }
      expect(rest).to.contain('event: message_stop');
      const after = await post(gw!.url, { model: 'model-sonnet-4.6', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
      expect(after.status).to.equal(404);
      upstream.setHandler((r) => (r.body.stream ? { kind: 'stream', events: nativeTextEvents(['a']) } : { kind: 'json', body: nativeMessage('a') }));
    });

    it('accepts configs made with parseConfig', () => {
      expect(() => parseConfig(configFile, {})).to.not.throw();
    });
  });
});
