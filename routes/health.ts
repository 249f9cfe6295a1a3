/**
 * Health: `GET /healthz` is liveness (`{status: "ok"}` while the process serves); `GET /health` adds
 * upstream and store reachability (`status: "degraded"` and 503 when either is unreachable) and each
 * key group's upstream targets with their state (healthy, cooling_down, breaker_open, half_open).
 * Before a shutdown `/health` answers 503 `status: "draining"` (readiness), while `/healthz` stays 200:
 * a liveness probe failing then would have the process killed before its requests finish.
 *
 * `/health` is public, so the upstream is not pinged per call: one ping at a time, its answer reused for
 * UPSTREAM_PING_REUSE_MS (an unauthenticated caller cannot make the gateway send the upstream a HEAD
 * per request).
 */
import type { RequestHandler } from 'express';
import { sendJson } from '../lib/http/json-reply';
import type { StoreConnection } from '../lib/store/types';
import type { KeyGroupUpstreamStatus, UpstreamClient } from '../lib/upstream';

/**
 * What /health (unauthenticated) shows of each group's targets: id, state and until when (ISO 8601),
 * never URLs, models or counters (the admin API's `GET /upstreams` has those).
 */
function viewTargets(groups: KeyGroupUpstreamStatus[]) {
  return groups.map((group) => ({
    id: group.keyGroup,
    targets: group.targets.map((target) => ({ id: target.id, state: target.state, until: target.until === null ? null : new Date(target.until).toISOString() })),
  }));
}

export function createLiveness(): RequestHandler {
  return (_req, res) => {
    sendJson(res, 200, { status: 'ok' });
  };
}

/** How long one upstream ping's answer serves /health, ms. */
export const UPSTREAM_PING_REUSE_MS = 5000;

export interface HealthOptions {
  /** The default key group's upstream client as the config now stands (a reload may replace it). */
  upstream: () => UpstreamClient;
  store: StoreConnection;
  /** True when the upstream is the embedded simulated one. */
  simulated: boolean;
  /** Each key group's upstream targets with their state (this instance's view). Default: not shown. */
  targets?: () => KeyGroupUpstreamStatus[];
  /** Clock, epoch ms. Default Date.now. */
  now?: () => number;
  /** True while the instance drains before a shutdown (503, `status: "draining"`). Default: never. */
  draining?: () => boolean;
}

export function createHealth(options: HealthOptions): RequestHandler {
  const now = options.now ?? Date.now;
  let ping: { answer: Promise<boolean>; at: number; client: UpstreamClient } | undefined;
  const upstreamReachable = (): Promise<boolean> => {
    const client = options.upstream();
    // A reload that replaced the client asks the new one at once, not the answer of the one it replaced.
    if (!ping || ping.client !== client || now() - ping.at >= UPSTREAM_PING_REUSE_MS) ping = { answer: client.ping(2000), at: now(), client };
    return ping.answer;
  };
  return async (_req, res) => {
    const [upstreamUp, storeReachable] = await Promise.all([
      upstreamReachable(),
      options.store.ping().then(() => true, () => false),
    ]);
    const ok = upstreamUp && storeReachable;
    // Draining wins: a load balancer must stop sending here whatever the upstream and store say.
    const draining = options.draining?.() ?? false;
    sendJson(res, ok && !draining ? 200 : 503, {
      status: draining ? 'draining' : ok ? 'ok' : 'degraded',
      upstream: { reachable: upstreamUp, simulated: options.simulated, ...(options.targets ? { keyGroups: viewTargets(options.targets()) } : {}) },
      store: { kind: options.store.kind, reachable: storeReachable },
    });
  };
}
