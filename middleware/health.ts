/**
 * Health: `GET /healthz` is liveness (`{status: "ok"}` while the process serves); `GET /health` adds
 * upstream and store reachability (`status: "degraded"` and 503 when either is unreachable).
 *
 * `/health` is public, so the upstream is not pinged per call: one ping at a time, its answer reused for
 * UPSTREAM_PING_REUSE_MS (an unauthenticated caller cannot make the gateway send the upstream a HEAD
 * per request).
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

/** How long one upstream ping's answer serves /health, ms. */
export const UPSTREAM_PING_REUSE_MS = 5000;

export interface HealthOptions {
  upstream: UpstreamClient;
  store: GatewayStore;
  /** True when the upstream is the embedded simulated one. */
  simulated: boolean;
  /** Clock, epoch ms. Default Date.now. */
  now?: () => number;
}

export function createHealth(options: HealthOptions): RequestHandler {
  const now = options.now ?? Date.now;
  let ping: { answer: Promise<boolean>; at: number } | undefined;
  const upstreamReachable = (): Promise<boolean> => {
    if (!ping || now() - ping.at >= UPSTREAM_PING_REUSE_MS) ping = { answer: options.upstream.ping(2000), at: now() };
    return ping.answer;
  };
  return async (_req, res) => {
    const [upstreamUp, storeReachable] = await Promise.all([
      upstreamReachable(),
      options.store.ping().then(() => true, () => false),
    ]);
    const ok = upstreamUp && storeReachable;
    sendJson(res, ok ? 200 : 503, {
      status: ok ? 'ok' : 'degraded',
      upstream: { reachable: upstreamUp, simulated: options.simulated },
      store: { kind: options.store.kind, reachable: storeReachable },
    });
  };
}
