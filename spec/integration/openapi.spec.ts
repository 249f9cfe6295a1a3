/** openapi.yaml parses, and describes every route the app serves (walked from the Express router stack). */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { parse } from 'yaml';
import { createGateway, type Gateway } from '../../lib';
import { createCapturingLogger } from '../helpers/gateway';

const SPEC_FILE = path.resolve(__dirname, '..', '..', '..', 'openapi.yaml');

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  rawPath?: string;
}

/** Every `METHOD /path` of a router stack, mounted routers included; `:param` written `{param}`. */
function collectRoutes(stack: Layer[], prefix = ''): string[] {
  const routes: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      for (const method of Object.keys(layer.route.methods)) {
        if (method !== '_all') routes.push(`${method.toUpperCase()} ${prefix}${layer.route.path.replace(/:(\w+)/g, '{$1}')}`);
      }
    } else if (layer.handle?.stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      routes.push(...collectRoutes(layer.handle.stack, prefix + mount));
    }
  }
  return routes;
}

describe('openapi.yaml', () => {
  let gateway: Gateway;
  let spec: any;
  before(async () => {
    spec = parse(fs.readFileSync(SPEC_FILE, 'utf8'));
    gateway = await createGateway({
      logger: createCapturingLogger().logger,
      env: { ADMIN_TOKEN: 'admin-token-for-openapi-test-0001', METRICS_TOKEN: 'm' },
      config: { upstream: { url: 'http://127.0.0.1:9' } },
    });
  });
  after(() => gateway.close());

  it('parses as OpenAPI 3.1 with paths and components', () => {
    expect(spec.openapi).to.match(/^3\.1\./);
    expect(spec.info.title).to.be.a('string');
    expect(Object.keys(spec.paths).length).to.be.greaterThan(5);
  });

  it('resolves every $ref it uses', () => {
    const refs = [...fs.readFileSync(SPEC_FILE, 'utf8').matchAll(/\$ref: '#\/([^']+)'/g)].map((m) => m[1]);
    expect(refs.length).to.be.greaterThan(10);
    for (const ref of refs) {
      const target = ref.split('/').reduce((node: any, part) => node?.[part], spec);
      expect(target, ref).to.not.equal(undefined);
    }
  });

  it('describes every route of the app', () => {
    const routes = collectRoutes((gateway.app as any).router.stack);
    expect(routes).to.include.members(['POST /v1/messages', 'POST /v1/chat/completions', 'GET /v1/models', 'GET /metrics', 'GET /healthz']);
    for (const route of routes) {
      const [method, routePath] = route.split(' ');
      expect(spec.paths, `${route} is missing from openapi.yaml`).to.have.property(routePath);
      expect(spec.paths[routePath], `${route} is missing from openapi.yaml`).to.have.property(method.toLowerCase());
    }
  });

  it('documents no public route the app does not serve', () => {
    const routes = new Set(collectRoutes((gateway.app as any).router.stack));
    for (const [routePath, operations] of Object.entries<Record<string, unknown>>(spec.paths)) {
      if (routePath.startsWith('/admin/') || routePath.startsWith('/dashboard')) continue; // mounted by the admin API when ADMIN_TOKEN is set
      for (const method of Object.keys(operations).filter((m) => m !== 'parameters')) {
        expect(routes.has(`${method.toUpperCase()} ${routePath}`), `${method} ${routePath}`).to.equal(true);
      }
    }
  });
});
