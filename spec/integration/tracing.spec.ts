/**
 * OpenTelemetry traces (lib/observability/tracing.ts) exported to an OTLP/HTTP receiver on loopback: a streamed chat
 * request from the real `openai` client, carrying a W3C `traceparent`, gives a server span parented to
 * it with child spans for the admission, the upstream call and the settlement, the GenAI attributes,
 * and never the prompt or the completion. Without an endpoint no OpenTelemetry package is loaded.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import OpenAI from 'openai';
import type { FakeHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver';

const PROMPT = 'PROMPT-TEXT-THAT-MUST-NEVER-BE-EXPORTED';
const COMPLETION = 'COMPLETION-TEXT-THAT-MUST-NEVER-BE-EXPORTED';
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const SESSION = '1d6a3c3e-0c51-4a57-8a0b-6f0f3f1d2c3b';

/** A streamed reply with cache tokens, so the cache attributes have something to show. */
const handler: FakeHandler = (request) => ({
  kind: 'stream',
  events: [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1, cache_creation_input_tokens: 5, cache_read_input_tokens: 100 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: COMPLETION } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 12 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ],
});

describe('OpenTelemetry traces (OTLP/HTTP receiver on loopback)', function () {
  this.timeout(30_000);
  let receiver: OtlpReceiver;
  let gw: TestGateway;
  let spans: ReceivedSpan[];

  before(async () => {
    receiver = await startOtlpReceiver();
    gw = await startTestGateway({ handler, tracingEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-under-test' } });
    const client = new OpenAI({
      apiKey: KEYS.all, baseURL: `${gw.url}/v1`, maxRetries: 0,
      defaultHeaders: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, 'session-id': SESSION },
    });
    const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, messages: [{ role: 'user', content: PROMPT }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).to.equal(COMPLETION);
    // Refused at auth: a server span with no upstream call.
    expect((await rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: nativeHeaders('sk-cs4-wrong'), body: { model: 'sonnet', max_tokens: 5, messages: [] } })).status).to.equal(401);
    // Closing the gateway exports what is buffered (its finish steps are done by then).
    await gw.close();
    spans = receiver.spans();
  });
  after(() => receiver.close());

  const chatServerSpan = () => spans.find((span) => span.kind === 2 && span.name === 'POST /v1/chat/completions')!;

  it('exports over OTLP/HTTP JSON to <endpoint>/v1/traces, as the service named by OTEL_SERVICE_NAME', () => {
    expect(receiver.requests.length).to.be.greaterThan(0);
    expect(receiver.requests.every((request) => request.path === '/v1/traces' && /^application\/json/.test(request.contentType ?? ''))).to.equal(true);
    expect(chatServerSpan().resource['service.name']).to.equal('gateway-under-test');
  });

  it('makes the request a server span parented to the client\'s traceparent, with the GenAI attributes', () => {
    const server = chatServerSpan();
    expect(server.traceId).to.equal(CLIENT_TRACE);
    expect(server.parentSpanId).to.equal(CLIENT_SPAN);
    expect(server.attributes).to.include({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.request.model': 'sonnet',
      'gen_ai.response.model': 'model-sonnet-4.6',
      'gen_ai.usage.input_tokens': 135,
      'gen_ai.usage.output_tokens': 12,
      'gen_ai.usage.cache_creation.input_tokens': 5,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'gen_ai.conversation.id': SESSION,
      'session.id': SESSION,
      'gateway.key.id': 'team-all',
      'gateway.key_group': 'default',
      'http.request.method': 'POST',
      'http.response.status_code': 200,
    });
    expect(server.attributes['gen_ai.response.finish_reasons']).to.deep.equal(['end_turn']);
    expect(server.attributes['gateway.credits']).to.be.a('number').and.greaterThan(0);
    expect(server.attributes['gateway.upstream.target']).to.equal(new URL(gw.upstream.url).origin);
  });

  it('has child spans for the admission, the upstream call (first byte event, to the last byte) and the settlement', () => {
    const server = chatServerSpan();
    const children = spans.filter((span) => span.parentSpanId === server.spanId);
    expect(children.map((span) => span.name).sort()).to.deep.equal(['chat model-sonnet-4.6', 'gateway.admission', 'gateway.settlement']);
    expect(children.every((span) => span.traceId === CLIENT_TRACE)).to.equal(true);
    const upstream = children.find((span) => span.name === 'chat model-sonnet-4.6')!;
    expect(upstream.kind).to.equal(3);
    expect(upstream.events).to.deep.equal(['upstream.first_byte']);
    expect(upstream.attributes).to.include({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'model-sonnet-4.6', 'http.response.status_code': 200 });
    // Each span ended (no order is asserted across spans: the SDK anchors each span's start to the wall
    // clock, so two spans a few microseconds apart may compare either way).
    expect(children.every((span) => BigInt(span.endTimeUnixNano) >= BigInt(span.startTimeUnixNano))).to.equal(true);
    expect(children.find((span) => span.name === 'gateway.admission')!.attributes).to.include({ 'gateway.store': 'memory' });
    expect(children.find((span) => span.name === 'gateway.settlement')!.attributes).to.include({ 'gateway.store': 'memory' });
  });

  it('traces a refused request without an upstream span or GenAI usage, and its own trace when no traceparent came', () => {
    const refused = spans.find((span) => span.kind === 2 && span.name === 'POST /v1/messages')!;
    expect(refused.attributes['http.response.status_code']).to.equal(401);
    expect(refused.traceId).not.to.equal(CLIENT_TRACE);
    expect(refused.parentSpanId).to.equal('');
    expect(refused.attributes).not.to.have.property('gen_ai.usage.input_tokens');
    expect(spans.filter((span) => span.parentSpanId === refused.spanId)).to.deep.equal([]);
  });

  it('never exports the prompt, the completion or a key', () => {
    const exported = receiver.bodies.join('\n');
    expect(exported).not.to.include(PROMPT);
    expect(exported).not.to.include(COMPLETION);
    expect(exported).not.to.include(KEYS.all);
  });
});

describe('OpenTelemetry off (no OTEL_EXPORTER_OTLP_ENDPOINT)', function () {
  this.timeout(30_000);
  /**
   * Build a gateway in a fresh process with `env`; whether the OpenTelemetry SDK or exporter was loaded
   * (`@opentelemetry/api`, a no-op facade, is loaded by prom-client and the Redis client either way).
   */
  const loadsOpenTelemetry = (env: Record<string, string>) => {
    const gatewayModule = path.resolve(__dirname, '../../lib/gateway.js');
    const script = `require(${JSON.stringify(gatewayModule)}).createGateway()
      .then(async (g) => { const loaded = Object.keys(require.cache).some((p) => /@opentelemetry[\\/](sdk-trace|exporter-trace|core|resources)/.test(p)); await g.close(); console.log(loaded); })
      .catch((err) => { console.error(err); process.exit(1); });`;
    return execFileSync(process.execPath, ['-e', script], { cwd: path.resolve(__dirname, '../../..'), env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'error', ...env }, encoding: 'utf8' }).trim();
  };

  it('loads no OpenTelemetry SDK package, and loads them once an endpoint is set', () => {
    expect(loadsOpenTelemetry({})).to.equal('false');
    expect(loadsOpenTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })).to.equal('true');
  });
});
