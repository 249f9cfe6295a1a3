/**
 * Health: `GET /healthz` is liveness (`{status: "ok"}` while the process serves); `GET /health` adds
 * upstream and store reachability (`status: "degraded"` and 503 when either is unreachable).
 */
import type { RequestHandler } from 'express';
import { sendJson } from '../lib/json-reply';
import type { GatewayStore } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';

export function createLiveness(): RequestHandler {
  return (_req, res) => {
    sendJson(res, 200, { status: 'ok' });
  };
}

export interface HealthOptions {
  upstream: UpstreamClient;
  store: GatewayStore;
  /** True when the upstream is the embedded simulated one. */
  simulated: boolean;
}

export function createHealth(options: HealthOptions): RequestHandler {
  return async (_req, res) => {
    const [upstreamReachable, storeReachable] = await Promise.all([
      options.upstream.ping(2000),
      options.store.ping().then(() => true, () => false),
    ]);
    const ok = upstreamReachable && storeReachable;
    sendJson(res, ok ? 200 : 503, {
      status: ok ? 'ok' : 'degraded',
      upstream: { reachable: upstreamReachable, simulated: options.simulated },
      store: { kind: options.store.kind, reachable: storeReachable },
    });
  };
}
