/**
 * The spans of a request as the pipeline sees them (lib/observability/tracing.ts makes them): what a step may do
 * with its own span, without knowing OpenTelemetry.
 */

/** Attribute values as the OpenTelemetry API takes them; undefined ones are left out. */
export type SpanAttributes = Record<string, string | number | boolean | string[] | undefined>;

/** A child span of a request. */
export interface TraceSpan {
  /** Add attributes. */
  set(attributes: SpanAttributes): void;
  /** Record a named moment (e.g. the first byte). */
  event(name: string): void;
  /** End it; with `error`, its status is ERROR with the error's message (never a body). Later calls do nothing. */
  end(error?: Error): void;
}

/** The trace of one request, on its context (`ctx.trace`). */
export interface RequestTrace {
  /** Start a child span of the request's server span; `client` for a call out of the gateway. */
  startSpan(name: string, kind?: 'internal' | 'client', attributes?: SpanAttributes): TraceSpan;
  /** Add attributes to the server span. */
  set(attributes: SpanAttributes): void;
  /**
   * End the server span with `attributes` (lib/observability/trace-attributes.ts `formatServerSpanAttributes`);
   * `status` is the HTTP status the client got (a 5xx marks the span as an error). Later calls do nothing.
   */
  end(attributes: SpanAttributes, status: number): void;
}
