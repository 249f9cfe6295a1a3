/** Which environment turns tracing on (lib/observability/tracing.ts), and the span attributes of a request (lib/observability/trace-attributes.ts). */
import { expect } from 'chai';
import { ConfigError } from '../../lib/config/config-error';
import { emptyUsage, type RequestContext } from '../../lib/pipeline/context';
import { formatServerSpanAttributes, operationNameOf } from '../../lib/observability/trace-attributes';
import { createTracing, parseResourceAttributes, tracesEndpointOf } from '../../lib/observability/tracing';

describe('tracing configuration (OTEL_* variables)', () => {
  const cases: Array<[string, Record<string, string>, string | undefined]> = [
    ['nothing set: off', {}, undefined],
    ['the base endpoint gets /v1/traces', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'http://collector:4318/v1/traces'],
    ['a trailing slash is not doubled', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, 'http://collector:4318/v1/traces'],
    ['the traces endpoint is used as it is', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/otlp/traces' }, 'https://b/otlp/traces'],
    ['OTEL_SDK_DISABLED=true: off', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' }, undefined],
    ['OTEL_TRACES_EXPORTER=none: off', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'none' }, undefined],
    ['an empty endpoint: off', { OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }, undefined],
  ];
  for (const [name, env, expected] of cases) {
    it(name, () => expect(tracesEndpointOf(env)).to.equal(expected));
  }

  it('is null (nothing loaded) without an endpoint', () => {
    expect(createTracing({})).to.equal(null);
  });

  it('refuses at start-up an endpoint that is not an http(s) URL, naming the variable', () => {
    for (const endpoint of ['collector:4317', 'not a url', 'grpc://collector:4317']) {
      expect(() => createTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })).to.throw(ConfigError, /^invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT: /);
    }
  });

  it('reads OTEL_RESOURCE_ATTRIBUTES pairs, percent-decoded, leaving out malformed ones', () => {
    expect(parseResourceAttributes('deployment.environment=prod,team=a%20b,bad,=x,k=%E0%A4%A')).to.deep.equal({ 'deployment.environment': 'prod', team: 'a b' });
    expect(parseResourceAttributes(undefined)).to.deep.equal({});
  });
});

describe('span attributes of a request', () => {
  const context = (overrides: Partial<RequestContext>): RequestContext => ({
    requestId: 'req_1', format: 'chat', route: 'POST /v1/chat/completions', startedAt: 0n, stream: true, warnings: [], tags: {}, ...overrides,
  });

  it('names the GenAI operation of the completion routes only', () => {
    expect(['POST /v1/messages', 'POST /v1/chat/completions', 'POST /v1/responses', 'POST /V1/Messages/'].map(operationNameOf)).to.deep.equal(['chat', 'chat', 'chat', 'chat']);
    expect(['POST /v1/messages/count_tokens', 'GET /v1/models', 'GET /admin/v1/usage'].map(operationNameOf)).to.deep.equal([undefined, undefined, undefined]);
  });

  it('counts cache tokens in gen_ai.usage.input_tokens and on their own, and never carries text', () => {
    const ctx = context({
      model: { id: 'model-sonnet-4.6', upstreamModel: 'up-sonnet' } as RequestContext['model'], requestedModel: 'sonnet', stopReason: 'tool_use',
      usage: { ...emptyUsage(), input_tokens: 10, output_tokens: 4, cache_creation_input_tokens: 2, cache_read_input_tokens: 30 }, sessionId: 's-1', agentId: 'a-1', credits: 0.5,
    });
    const attributes = formatServerSpanAttributes(ctx, 200);
    expect(attributes).to.include({
      'gen_ai.usage.input_tokens': 42, 'gen_ai.usage.output_tokens': 4, 'gen_ai.usage.cache_creation.input_tokens': 2,
      'gen_ai.usage.cache_read.input_tokens': 30, 'gen_ai.request.model': 'sonnet', 'gen_ai.response.model': 'model-sonnet-4.6',
      'gen_ai.conversation.id': 's-1', 'gen_ai.agent.id': 'a-1', 'gateway.credits': 0.5, 'http.response.status_code': 200,
    });
    expect(attributes['gen_ai.response.finish_reasons']).to.deep.equal(['tool_use']);
  });

  it('leaves the GenAI attributes out of a request refused before a model was resolved', () => {
    const attributes = formatServerSpanAttributes(context({ errorCode: 'invalid_api_key' }), 401);
    expect(Object.keys(attributes).filter((name) => name.startsWith('gen_ai.'))).to.deep.equal([]);
    expect(attributes['error.type']).to.equal('invalid_api_key');
  });

  it('carries why a request failed: the error type and message and the upstream attempt chain, as the log line says them', () => {
    const attributes = formatServerSpanAttributes(context({
      error: { type: 'overloaded_error', message: 'Overloaded' },
      attempts: [{ target: 'a', outcome: 529, reason: { type: 'overloaded_error', message: 'Overloaded' } }, { target: 'b', outcome: 'ECONNREFUSED' }],
    }), 529);
    expect(attributes).to.include({
      'error.type': 'overloaded_error', 'gateway.error.message': 'Overloaded', 'gateway.upstream.attempts': 'a:529 overloaded_error (Overloaded) -> b:ECONNREFUSED',
    });
    expect(formatServerSpanAttributes(context({}), 200)).to.not.have.any.keys('gateway.error.message', 'gateway.upstream.attempts');
  });
});
