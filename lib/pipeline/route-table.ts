/**
 * The gateway's route table as names: the public routes, where the admin API and dashboard are
 * mounted, and the bounded route label the metrics use.
 */

/** The routes of the public API, as `METHOD /path` (the path check suggests them). */
export const PUBLIC_ROUTES = [
  'POST /v1/messages',
  'POST /v1/messages/count_tokens',
  'POST /v1/chat/completions',
  'POST /v1/responses',
  'GET /v1/responses/{id}',
  'DELETE /v1/responses/{id}',
  'GET /v1/models',
  'GET /v1/models/{id}',
  'POST /v1/messages/batches',
  'GET /v1/messages/batches',
  'GET /v1/messages/batches/{id}',
  'POST /v1/messages/batches/{id}/cancel',
  'GET /v1/messages/batches/{id}/results',
  'DELETE /v1/messages/batches/{id}',
  'POST /v1/files',
  'GET /v1/files',
  'GET /v1/files/{id}',
  'GET /v1/files/{id}/content',
  'DELETE /v1/files/{id}',
  'GET /healthz',
  'GET /api/hello',
  'GET /health',
  'GET /metrics',
];

/** Where the admin API is mounted (when ADMIN_TOKEN is set). */
export const ADMIN_API_PATH = '/admin/v1';

/** Where the dashboard is mounted (when ADMIN_TOKEN is set). */
export const DASHBOARD_PATH = '/dashboard';

/** The label of every request whose path is none of the gateway's routes. */
const UNMATCHED_ROUTE = 'unmatched';

const publicPaths = new Set(PUBLIC_ROUTES.map((route) => route.slice(route.indexOf(' ') + 1)));
const publicRoutes = new Set(PUBLIC_ROUTES);
/** Mount points labelled as one route each, whatever lies under them. */
const MOUNTS = [ADMIN_API_PATH, DASHBOARD_PATH];

/**
 * The route label of a request's metrics series, from its `METHOD /path` (the request context's
 * `route`, whose path is the one the client sent). A label is a series for as long as the process
 * lives, so the label set must not grow with what clients send:
 * - a public route's path, matched as the router matches it (any case, one trailing slash ignored):
 *   `METHOD /v1/messages`, with the method as sent (a wrong method is a 405 on a known path);
 * - anything under the admin API or the dashboard: `METHOD /admin/v1` or `METHOD /dashboard`;
 * - any other path: `unmatched` (its 404s are counted together; the log line keeps the path).
 * Methods are bounded already: Node's HTTP parser accepts only the methods it knows.
 */
export function routeLabel(route: string): string {
  if (publicRoutes.has(route)) return route;
  const space = route.indexOf(' ');
  const method = route.slice(0, space);
  const path = route.slice(space + 1).toLowerCase().replace(/\/$/, '');
  if (publicPaths.has(path)) return `${method} ${path}`;
  // One stored response, model, message batch or file: every id under one label.
  if (/^\/v1\/responses\/[^/]+$/.test(path)) return `${method} /v1/responses/{id}`;
  if (/^\/v1\/models\/[^/]+$/.test(path)) return `${method} /v1/models/{id}`;
  const batch = /^\/v1\/messages\/batches\/[^/]+(\/cancel|\/results)?$/.exec(path);
  if (batch) return `${method} /v1/messages/batches/{id}${batch[1] ?? ''}`;
  const file = /^\/v1\/files\/[^/]+(\/content)?$/.exec(path);
  if (file) return `${method} /v1/files/{id}${file[1] ?? ''}`;
  for (const mount of MOUNTS) {
    if (path === mount || path.startsWith(`${mount}/`)) return `${method} ${mount}`;
  }
  return UNMATCHED_ROUTE;
}

/**
 * Step names (the handler's `name`, seen in the router's stack) that every route reaching the upstream
 * must take, in this order, before its upstream step. A test walks the route table against it.
 */
export const REQUIRED_UPSTREAM_STEPS = ['auth', 'jsonBody', 'validateBody', 'resolveAlias', 'keyGroupCheck', 'modelWhitelist', 'rateLimit', 'creditReservation'];

/** Routes that reach the upstream without being billed (so without the step `creditReservation`). */
export const UNBILLED_UPSTREAM_ROUTES = ['/v1/messages/count_tokens'];

/** Names of the steps that send a request upstream (one per route, dispatching by key group). */
export const UPSTREAM_STEP_NAMES = ['upstreamMessages', 'upstreamCountTokens', 'upstreamChat', 'upstreamResponses'];
