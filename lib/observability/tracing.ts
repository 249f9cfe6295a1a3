/**
 * OpenTelemetry traces of requests, through the official `@opentelemetry/*` packages: on when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, exported over
 * OTLP/HTTP (JSON) with a batch span processor. Off otherwise, and then free: none of those packages is
 * loaded (they are required only here, when tracing is turned on) and each request pays one
 * `undefined` check per step.
 *
 * Each request is a server span (`POST /v1/messages`), parented to the client's W3C `traceparent`
 * when it sends one, with child spans for the admission (the store round trip before the upstream),
 * the upstream call (an event at its first byte, ended at its last) and the settlement. Attributes:
 * lib/observability/trace-attributes.ts. The provider is this gateway's own, not registered globally, so a library
 * user's own OpenTelemetry set-up is left as it is.
 *
 * The standard variables apply: `OTEL_SERVICE_NAME` (default `model-gateway`), `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`; `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` keep it off.
 */
import type { IncomingMessage } from 'node:http';
import type { Context, Span, SpanKind as SpanKindEnum, Tracer } from '@opentelemetry/api';
import { ConfigError } from '../config/config-error';
import { definedAttributes } from './trace-attributes';
import type { RequestTrace, TraceSpan } from './trace-span';

export type { RequestTrace, TraceSpan } from './trace-span';

/** Tracing of a gateway: starts request traces; `shutdown` exports what is left (graceful shutdown). */
export interface Tracing {
  startRequest(req: IncomingMessage, route: string): RequestTrace;
  /** Export the spans still buffered, then stop. */
  shutdown(): Promise<void>;
}

/** Variables of the environment tracing reads (a subset of process.env). */
export type TracingEnv = Record<string, string | undefined>;

/** The OTLP/HTTP traces URL the environment names, or undefined when tracing is off. */
export function tracesEndpointOf(env: TracingEnv): string | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The base endpoint gets the signal's path, as the OTLP exporter specification says.
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

/**
 * Tracing for the environment `env`, or null when it names no OTLP endpoint (nothing is loaded then).
 * @throws ConfigError when the endpoint is not an http(s) URL (at start-up, naming the variable)
 */
export function createTracing(env: TracingEnv = process.env): Tracing | null {
  const url = tracesEndpointOf(env);
  if (url === undefined) return null;
  checkEndpoint(url, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT');
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on */
  const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const resource = resourceFromAttributes({
    'service.name': env.OTEL_SERVICE_NAME?.trim() || 'model-gateway',
    ...parseResourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES),
  });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))] });
  const tracer = provider.getTracer('model-gateway');
  const propagator = new W3CTraceContextPropagator();
  return {
    startRequest(req, route) {
      const parent = propagator.extract(api.ROOT_CONTEXT, req.headers, api.defaultTextMapGetter);
      return createRequestTrace(api, tracer, parent, req, route);
    },
    shutdown: () => provider.shutdown(),
  };
}

/** @throws ConfigError unless `url` is an http: or https: URL. */
function checkEndpoint(url: string, variable: string): void {
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    // reported below
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError(`invalid configuration: ${variable}: "${url.slice(0, 200)}" is not an http(s) URL; the gateway exports OTLP over HTTP, e.g. http://127.0.0.1:4318`);
  }
}

/** `OTEL_RESOURCE_ATTRIBUTES` (`k=v,k2=v2`, values percent-encoded) as attributes; bad pairs are left out. */
export function parseResourceAttributes(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // A malformed escape: the pair is left out.
    }
  }
  return out;
}

function createRequestTrace(
  api: typeof import('@opentelemetry/api'), tracer: Tracer, parent: Context, req: IncomingMessage, route: string,
): RequestTrace {
  const server = tracer.startSpan(route, {
    kind: api.SpanKind.SERVER,
    attributes: { 'http.request.method': req.method ?? 'GET', 'url.path': (req.url ?? '/').split('?')[0] },
  }, parent);
  const inServer = api.trace.setSpan(parent, server);
  const kinds: Record<'internal' | 'client', SpanKindEnum> = { internal: api.SpanKind.INTERNAL, client: api.SpanKind.CLIENT };
  let ended = false;
  return {
    startSpan(name, kind = 'internal', attributes = {}) {
      return wrapSpan(api, tracer.startSpan(name, { kind: kinds[kind], attributes: definedAttributes(attributes) }, inServer));
    },
    set(attributes) {
      server.setAttributes(definedAttributes(attributes));
    },
    end(attributes, status) {
      if (ended) return;
      ended = true;
      server.setAttributes(definedAttributes(attributes));
      // A server span is an error for a 5xx only (a 4xx is the client's, per the HTTP conventions).
      if (status >= 500) server.setStatus({ code: api.SpanStatusCode.ERROR });
      server.end();
    },
  };
}

function wrapSpan(api: typeof import('@opentelemetry/api'), span: Span): TraceSpan {
  let ended = false;
  return {
    set: (attributes) => span.setAttributes(definedAttributes(attributes)),
    event: (name) => span.addEvent(name),
    end(error) {
      if (ended) return;
      ended = true;
      if (error) {
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: error.message.slice(0, 200) });
        span.setAttribute('error.type', error.name);
      }
      span.end();
    },
  };
}
