/**
 * Prometheus metrics (prom-client), one registry per gateway so several gateways in one process (tests,
 * integrators) do not share counters. Requests are counted by the finish step, once per request, from
 * the same facts the log line reports; open streams are tracked by a step just before the upstream.
 *
 * Series (all prefixed `gateway_`):
 *   requests_total{route,status,model}                     every request
 *   request_duration_seconds{route,model}                  arrival to close (histogram)
 *   time_to_first_byte_seconds{route,model}                arrival to first reply byte (histogram)
 *   upstream_errors_total{route,model,reason}              upstream 5xx/429 statuses, unreachable, timeout
 *   tokens_total{model,type}                               input, output, cache_creation, cache_read
 *   credits_total{model}                                   credits of the usage at the model's prices
 *   refusals_total{reason}                                 rate-limit and credit-cap refusals (by error code)
 *   open_streams                                           SSE replies in progress
 *   key_credit_cap_used_ratio{key_id}                      each capped key's month spend / cap (lib/alerts/spend-gauge.ts)
 *   upstream_target_requests_total{upstream,target}        attempts sent to each upstream target
 *   upstream_target_failures_total{upstream,target}        attempts that failed (connection, head timeout, 429/5xx)
 *   upstream_target_failovers_total{upstream,target}       requests moved away from the target after a failure
 *   upstream_target_up{upstream,target}                    1 when the target takes requests, 0 cooling down or breaker open
 * plus prom-client's default process metrics. `route` is the route as the route table names it
 * (`routeLabel` in lib/pipeline/route-table.ts: `POST /v1/messages`, `GET /admin/v1`, `unmatched`), never the path a
 * client sent, so what clients send cannot add series.
 */
import crypto from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import client from 'prom-client';
import { priceUsage } from '../config/catalogue';
import { getContext, type RequestContext } from '../pipeline/context';
import { errors } from '../http/errors';
import { routeLabel } from '../pipeline/route-table';
import type { PooledUpstream, TargetStatus } from '../upstream';

/** Error codes (chat `error.code`) that count as rate-limit or credit-cap refusals. */
export const REFUSAL_CODES: Readonly<Record<string, string>> = {
  rate_limit_exceeded: 'rate_limit',
  insufficient_quota: 'credit_cap',
  credit_cap_exceeded: 'credit_cap',
};

/** Latency buckets in seconds: 10 ms to 10 minutes (long streams). */
const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export interface GatewayMetrics {
  readonly registry: client.Registry;
  /** Finish hook: counts one finished request. */
  recordRequest(ctx: RequestContext, res: Response): void;
  /** Pipeline step before the upstream: counts a streamed reply as open until its response closes. */
  trackOpenStreams: RequestHandler;
  /**
   * Report the upstream targets' counters and state (read at each scrape from the clients' own
   * counters, so a request pays nothing for them). The first call on a registry is the one kept.
   */
  watchUpstreams(upstreams: () => PooledUpstream[]): void;
}

export function createMetrics(options: { collectDefault?: boolean } = {}): GatewayMetrics {
  const registry = new client.Registry();
  if (options.collectDefault ?? true) client.collectDefaultMetrics({ register: registry, prefix: 'gateway_' });
  const registers = [registry];

  const requests = new client.Counter({ name: 'gateway_requests_total', help: 'Requests by route, status and canonical model.', labelNames: ['route', 'status', 'model'], registers });
  const duration = new client.Histogram({ name: 'gateway_request_duration_seconds', help: 'Time from arrival to the response closing.', labelNames: ['route', 'model'], buckets: LATENCY_BUCKETS, registers });
  const firstByte = new client.Histogram({ name: 'gateway_time_to_first_byte_seconds', help: 'Time from arrival to the first byte of the reply body.', labelNames: ['route', 'model'], buckets: LATENCY_BUCKETS, registers });
  const upstreamErrors = new client.Counter({ name: 'gateway_upstream_errors_total', help: 'Upstream failures: error statuses, unreachable, timed out.', labelNames: ['route', 'model', 'reason'], registers });
  const tokens = new client.Counter({ name: 'gateway_tokens_total', help: 'Tokens by model and type (input, output, cache_creation, cache_read).', labelNames: ['model', 'type'], registers });
  const credits = new client.Counter({ name: 'gateway_credits_total', help: 'Credits of the usage, at the model prices.', labelNames: ['model'], registers });
  const refusals = new client.Counter({ name: 'gateway_refusals_total', help: 'Requests refused by a rate limit or a credit cap.', labelNames: ['reason'], registers });
  const openStreams = new client.Gauge({ name: 'gateway_open_streams', help: 'SSE replies in progress.', registers });

  function recordRequest(ctx: RequestContext, res: Response): void {
    const model = ctx.model?.id ?? '';
    const status = String(res.statusCode);
    const route = routeLabel(ctx.route);
    requests.inc({ route, status, model });
    duration.observe({ route, model }, Number(process.hrtime.bigint() - ctx.startedAt) / 1e9);
    if (ctx.firstByteMs !== undefined) firstByte.observe({ route, model }, ctx.firstByteMs / 1000);
    const reason = upstreamErrorReason(ctx, res.statusCode);
    if (reason) upstreamErrors.inc({ route, model, reason });
    const refusal = ctx.errorCode === undefined ? undefined : REFUSAL_CODES[ctx.errorCode];
    if (refusal) refusals.inc({ reason: refusal });
    if (ctx.usage && ctx.model) {
      const u = ctx.usage;
      tokens.inc({ model, type: 'input' }, u.input_tokens);
      tokens.inc({ model, type: 'output' }, u.output_tokens);
      tokens.inc({ model, type: 'cache_creation' }, u.cache_creation_input_tokens);
      tokens.inc({ model, type: 'cache_read' }, u.cache_read_input_tokens);
      // What settlement billed (lib/billing/settlement.ts: a target's `priceMultiplier`, a reply billed at its
      // hold); priced here only where no settlement ran (a request without a hold).
      credits.inc({ model }, ctx.credits ?? priceUsage(ctx.model, u) * (ctx.priceMultiplier ?? 1));
    }
  }

  const trackOpenStreams: RequestHandler = (_req, res, next) => {
    if (getContext(res).stream) {
      openStreams.inc();
      res.once('close', () => openStreams.dec());
    }
    next();
  };

  function watchUpstreams(upstreams: () => PooledUpstream[]): void {
    // One router per registry reports its pool; a second one on the same registry adds nothing.
    if (registry.getSingleMetric('gateway_upstream_target_requests_total')) return;
    const labelNames = ['upstream', 'target'];
    const perTarget = (read: (status: TargetStatus) => number) => function (this: client.Counter | client.Gauge) {
      this.reset();
      for (const { name, client: upstream } of upstreams()) {
        for (const status of upstream.describeTargets()) this.inc({ upstream: name, target: status.id }, read(status));
      }
    };
    new client.Counter({ name: 'gateway_upstream_target_requests_total', help: 'Attempts sent to each upstream target.', labelNames, registers, collect: perTarget((s) => s.requests) });
    new client.Counter({ name: 'gateway_upstream_target_failures_total', help: 'Attempts an upstream target failed: connection error, head timeout, 429/500/502/503/529.', labelNames, registers, collect: perTarget((s) => s.failures) });
    new client.Counter({ name: 'gateway_upstream_target_failovers_total', help: 'Requests moved away from an upstream target to another after a failure.', labelNames, registers, collect: perTarget((s) => s.failovers) });
    new client.Gauge({ name: 'gateway_upstream_target_up', help: '1 while an upstream target takes requests; 0 while it cools down or its breaker is open.', labelNames, registers, collect: perTarget((s) => (s.state === 'healthy' || s.state === 'half_open' ? 1 : 0)) });
  }

  return { registry, recordRequest, trackOpenStreams, watchUpstreams };
}

/**
 * Why a request counts as an upstream error, or undefined: the upstream answered 429 or 5xx, or the
 * gateway could not reach it (502 `upstream_error` with no upstream status) or it timed out (504).
 */
function upstreamErrorReason(ctx: RequestContext, status: number): string | undefined {
  if (ctx.upstreamStatus !== undefined) {
    return ctx.upstreamStatus === 429 || ctx.upstreamStatus >= 500 ? `status_${ctx.upstreamStatus}` : undefined;
  }
  if (ctx.errorCode !== 'upstream_error') return undefined;
  return status === 504 ? 'timeout' : 'unreachable';
}

/**
 * `GET /metrics`: the registry in Prometheus text format. With a token, the request must carry
 * `Authorization: Bearer <token>` (401 otherwise, in the native error shape). Without one the endpoint
 * is open, so it leaves out the metrics named in `privateMetrics` (per-key figures such as each key's
 * cap usage, which would tell anyone every key id and how close it is to its cap).
 */
export function createMetricsEndpoint(options: { registry: client.Registry; token: () => string | null; privateMetrics?: string[] }): RequestHandler {
  const hidden = new Set(options.privateMetrics ?? []);
  return async (req, res, next) => {
    const token = options.token();
    if (token !== null) {
      const sent = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
      if (sent === undefined || !constantTimeEqual(sent, token)) {
        res.setHeader('www-authenticate', 'Bearer realm="metrics"');
        return next(errors.authentication('GET /metrics needs "Authorization: Bearer <METRICS_TOKEN>"'));
      }
    }
    try {
      const text = token !== null || hidden.size === 0 ? await options.registry.metrics() : await openMetricsText(options.registry, hidden);
      res.setHeader('content-type', options.registry.contentType);
      res.setHeader('cache-control', 'no-store');
      res.end(text);
    } catch (err) {
      next(err);
    }
  };
}

/** The registry's text without the metrics named in `hidden` (which are not even collected). */
async function openMetricsText(registry: client.Registry, hidden: Set<string>): Promise<string> {
  const names = registry.getMetricsAsArray().map((metric) => metric.name).filter((name) => !hidden.has(name));
  const parts = await Promise.all(names.map((name) => registry.getSingleMetricAsString(name)));
  return `${parts.join('\n')}\n`;
}

/** Compare digests so the time taken says nothing about the token. */
function constantTimeEqual(a: string, b: string): boolean {
  const digest = (text: string) => crypto.createHash('sha256').update(text).digest();
  return crypto.timingSafeEqual(digest(a), digest(b));
}
