/**
 * An OTLP/HTTP trace receiver on 127.0.0.1 (the collector's `/v1/traces`, JSON encoding), for the
 * tracing tests: records every export request and answers as a collector does (200 with an empty
 * `ExportTraceServiceResponse`). The OTLP JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):
 * trace and span ids as hex strings, attributes as `{key, value: {stringValue | intValue | ...}}`.
 */
import http from 'node:http';
import { listenOnLoopback } from '../../lib/http/loopback';

/** A span as the tests read it: ids, names, kind and its attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  events: string[];
  status: { code?: number; message?: string };
  /** The resource's attributes (service.name, ...). */
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`). */
  url: string;
  /** Every export request's raw body, as received. */
  bodies: string[];
  /** Paths and content types of the export requests. */
  requests: Array<{ path: string; contentType: string | undefined }>;
  spans(): ReceivedSpan[];
  close(): Promise<void>;
}

/** An OTLP AnyValue as a plain value. */
function plainValue(value: Record<string, any> | undefined): unknown {
  if (!value) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(plainValue);
  return undefined;
}

function plainAttributes(list: Array<{ key: string; value: Record<string, any> }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, plainValue(value)]));
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] });
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !/^application\/json/.test(req.headers['content-type'] ?? '')) {
        res.writeHead(415, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  const { url, close } = await listenOnLoopback(server);
  return {
    url, bodies, requests, close,
    spans() {
      const spans: ReceivedSpan[] = [];
      for (const body of bodies) {
        for (const resourceSpans of JSON.parse(body).resourceSpans ?? []) {
          const resource = plainAttributes(resourceSpans.resource?.attributes);
          for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
            for (const span of scopeSpans.spans ?? []) {
              spans.push({
                traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId ?? '', name: span.name, kind: span.kind,
                startTimeUnixNano: String(span.startTimeUnixNano), endTimeUnixNano: String(span.endTimeUnixNano),
                attributes: plainAttributes(span.attributes), events: (span.events ?? []).map((event: { name: string }) => event.name),
                status: span.status ?? {}, resource,
              });
            }
          }
        }
      }
      return spans;
    },
  };
}
