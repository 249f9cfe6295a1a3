/**
 * No bypass: every route that reaches the upstream takes the same auth, whitelist, rate-limit and
 * credit steps. The route table is walked statically (step names, in order), then every route is
 * called without a key and with a key that may not use the model, and the upstream must see nothing.
 */
import express from 'express';
import { expect } from 'chai';
import { REQUIRED_UPSTREAM_STEPS, UNBILLED_UPSTREAM_ROUTES, UPSTREAM_STEP_NAMES } from '../../lib/pipeline/route-table';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { rawRequest } from '../helpers/http-client';

interface RouteEntry {
  methods: string[];
  path: string;
  steps: string[];
}

/** An Express 5 app or router: its stack of layers. */
type Routable = object;

function stackOf(routable: any): any[] {
  return routable.router?.stack ?? routable.stack ?? [];
}

/** The routes of an Express 5 app or router (mounted routers included), with their handler names in order. */
function listRoutes(routable: Routable): { routes: RouteEntry[]; appLevel: string[] } {
  const routes: RouteEntry[] = [];
  const appLevel: string[] = [];
  const walk = (stack: any[]) => {
    for (const layer of stack) {
      if (layer.route) {
        routes.push({ methods: Object.keys(layer.route.methods), path: layer.route.path, steps: layer.route.stack.map((l: any) => l.name) });
      } else if (Array.isArray(layer.handle?.stack)) {
        walk(layer.handle.stack);
      } else {
        appLevel.push(layer.name);
      }
    }
  };
  walk(stackOf(routable));
  return { routes, appLevel };
}

/** The steps a route must take: all of them, but no credit reservation step on an unbilled route such as count_tokens. */
function requiredSteps(path: string): string[] {
  return REQUIRED_UPSTREAM_STEPS.filter((step) => step !== 'creditReservation' || !UNBILLED_UPSTREAM_ROUTES.includes(path));
}

/** Problems with a route table: upstream routes missing a required step, or taking them out of order. */
function findBypasses(app: Routable): string[] {
  const { routes, appLevel } = listRoutes(app);
  const problems: string[] = [];
  for (const name of appLevel) {
    if (UPSTREAM_STEP_NAMES.includes(name)) problems.push(`app-level middleware ${name} reaches the upstream outside any route`);
  }
  for (const route of routes) {
    const upstreamAt = route.steps.findIndex((name) => UPSTREAM_STEP_NAMES.includes(name));
    if (upstreamAt === -1) continue;
    let previous = -1;
    for (const required of requiredSteps(route.path)) {
      const at = route.steps.indexOf(required);
      if (at === -1 || at > upstreamAt) problems.push(`${route.methods} ${route.path}: no ${required} step before ${route.steps[upstreamAt]}`);
      else if (at < previous) problems.push(`${route.methods} ${route.path}: ${required} runs out of order`);
      previous = Math.max(previous, at);
    }
  }
  return problems;
}

describe('no bypass', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => gw.close());

  const app = () => gw.gateway.gateway.router;

  it('every route that reaches the upstream takes every required step, in order', () => {
    // The app the server listens with: the gateway router mounted in it is walked too.
    expect(listRoutes(gw.gateway.gateway.app).routes.length).to.equal(listRoutes(app()).routes.length);
    const { routes } = listRoutes(app());
    const upstreamRoutes = routes.filter((r) => r.steps.some((name) => UPSTREAM_STEP_NAMES.includes(name)));
    expect(upstreamRoutes.map((r) => r.path)).to.include.members(['/v1/messages', '/v1/messages/count_tokens', '/v1/chat/completions', '/v1/responses']);
    expect(findBypasses(app())).to.deep.equal([]);
  });

  it('the walker catches a route that skips a step (the check can fail)', () => {
    const bad = express();
    const inner = express.Router();
    const upstreamMessages = function upstreamMessages() {};
    const auth = function auth() {};
    inner.post('/v1/sneaky', auth as any, upstreamMessages as any);
    bad.use(inner);
    const problems = findBypasses(bad);
    expect(problems).to.include('post /v1/sneaky: no modelWhitelist step before upstreamMessages');
    expect(problems).to.include('post /v1/sneaky: no creditReservation step before upstreamMessages');
    expect(problems).to.include('post /v1/sneaky: no rateLimit step before upstreamMessages');
  });

  it('no route of the table reaches the upstream without a valid key or with a model the key may not use', async () => {
    const { routes } = listRoutes(app());
    const body = { model: 'sonnet', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    let calls = 0;
    for (const route of routes) {
      for (const method of route.methods) {
        const path = route.path;
        const attempts: Array<Array<[string, string]>> = [
          [['content-type', 'application/json'], ['anthropic-version', '2023-06-01']],
          [['content-type', 'application/json'], ['anthropic-version', '2023-06-01'], ['x-api-key', KEYS.revoked]],
          [['content-type', 'application/json'], ['authorization', `Bearer ${KEYS.revoked}`]],
          [['content-type', 'application/json'], ['anthropic-version', '2023-06-01'], ['x-api-key', KEYS.haikuOnly]],
          [['content-type', 'application/json'], ['authorization', `Bearer ${KEYS.haikuOnly}`]],
        ];
        for (const headers of attempts) {
          const reply = await rawRequest(gw.url, { method: method.toUpperCase(), path, headers, body: method === 'get' ? undefined : body });
          calls++;
          // Routes with an upstream step must refuse; the others (health, metrics, models) only must not proxy.
          if (route.steps.some((name) => UPSTREAM_STEP_NAMES.includes(name))) expect(reply.status, `${method} ${path}`).to.be.within(400, 499);
        }
      }
    }
    expect(calls).to.be.greaterThan(20);
    // /health probes the upstream with HEAD, and listing Message Batches or Files (no model) asks the
    // upstream for its page before keeping this key's own; nothing else may have reached it.
    const listed = (r: { method: string; url: string }) => r.method === 'GET' && (r.url === '/v1/messages/batches' || r.url === '/v1/files');
    expect(gw.upstream.requests.filter((r) => r.method !== 'HEAD' && !listed(r))).to.have.length(0);
    // And only with a valid key and the version header: the one haikuOnly attempt that carries both, per list.
    expect(gw.upstream.requests.filter(listed)).to.have.length(2);
  });
});
