/**
 * The logger's request scope (an AsyncLocalStorage) is entered only when code other than the
 * gateway's own steps can write lines during a request; the gateway's own lines name their request
 * either way. See `needsRequestScope` in lib/gateway.ts.
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { buildGateway, needsRequestScope, type BuildOptions, type Gateway } from '../../lib/gateway';
import { requestScope } from '../../lib/observability/logger';
import { MemoryStore } from '../../lib/store';
import { createCapturingLogger, KEYS, testConfigObject, UPSTREAM_SECRET } from '../helpers/gateway';
import { nativeMessage, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { eventually } from '../helpers/library';
import { listenOnLoopback, type LoopbackServer } from '../../lib/http/loopback';
import { startGatewayProcess, writeTempConfig } from '../helpers/gateway-process';
import { deleteRedisPrefix, testRedisUrl, uniqueRedisPrefix } from '../helpers/redis';
import { SCOPE_ENTERED, SCOPE_PROBE } from '../helpers/scope-probe';

/** A memory store (so unguarded) that records the request scope each key lookup ran in. */
class ScopeRecordingStore extends MemoryStore {
  readonly scopes: Array<string | undefined> = [];
  override identifyKey(sha256: string, now: number, fresh?: boolean) {
    this.scopes.push(requestScope.getStore()?.requestId);
    return super.identifyKey(sha256, now, fresh);
  }
}

describe('request scope of log lines', () => {
  let upstream: FakeUpstream;
  const opened: Array<{ close(): Promise<unknown> }> = [];
  before(async () => {
    upstream = await startFakeUpstream(() => ({ kind: 'json', body: { ...nativeMessage('a'), stop_reason: 'brand_new_reason' } }));
    process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
  });
  afterEach(async () => {
    while (opened.length > 0) await opened.pop()!.close();
  });
  after(() => upstream.close());

  async function serve(options: Omit<BuildOptions, 'config'>): Promise<{ gateway: Gateway; url: string; lines: Array<Record<string, any>> }> {
    const { logger, lines } = createCapturingLogger();
    const gateway = await buildGateway({ config: parseConfig(testConfigObject(upstream.url), { PORT: '0' }), logger, ...options });
    opened.push(gateway);
    const server: LoopbackServer = await listenOnLoopback(http.createServer(gateway.app));
    opened.push(server);
    return { gateway, url: server.url, lines };
  }

  const chat = (url: string) => fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'x' }] }),
  });

  it('is needed for caller code, hooks or a fail-open store, and only then', () => {
    expect(needsRequestScope({ callerCode: false, hooks: 0, failOpenStore: false })).to.equal(false);
    expect(needsRequestScope({ callerCode: true, hooks: 0, failOpenStore: false })).to.equal(true);
    expect(needsRequestScope({ callerCode: false, hooks: 1, failOpenStore: false })).to.equal(true);
    expect(needsRequestScope({ callerCode: false, hooks: 0, failOpenStore: true })).to.equal(true);
  });

  it('is left out when nothing but the gateway writes lines, and its own lines still carry the request id', async () => {
    const store = new ScopeRecordingStore();
    const { url, lines } = await serve({ store, requestScope: false });
    const reply = await chat(url);
    expect(reply.status).to.equal(200);
    const id = reply.headers.get('request-id');
    await eventually(() => lines.some((l) => l.message === 'request'));
    expect(store.scopes).to.deep.equal([undefined]);
    const warning = lines.find((l) => l.level === 'warn' && /stop reason/.test(l.message));
    expect(warning, 'unknown stop reason warning').to.include({ request_id: id });
    expect(lines.find((l) => l.message === 'request')).to.include({ request_id: id });
  });

  it('is entered by default (a library caller may log from its own middleware)', async () => {
    const store = new ScopeRecordingStore();
    const { url } = await serve({ store });
    const reply = await chat(url);
    expect(store.scopes).to.deep.equal([reply.headers.get('request-id')]);
  });

  it('is entered when hooks are registered, and their lines carry the request id', async () => {
    const store = new ScopeRecordingStore();
    let gateway: Gateway | undefined;
    const served = await serve({ store, requestScope: false, hooks: { afterAuth: () => void gateway!.logger.warn({ message: 'hook warning' }) } });
    gateway = served.gateway;
    const reply = await chat(served.url);
    const id = reply.headers.get('request-id');
    expect(store.scopes).to.deep.equal([id]);
    await eventually(() => served.lines.some((l) => l.message === 'request'));
    expect(served.lines.find((l) => l.message === 'hook warning')).to.include({ request_id: id });
  });

  describe('in the server process (npm start, the Procfile)', () => {
    /** Run dist/lib/server.js with the probe, send one chat request, stop it; its output. */
    async function serveOneRequest(config: Record<string, unknown>, env: Record<string, string>): Promise<string> {
      const gateway = await startGatewayProcess(
        { GATEWAY_CONFIG: writeTempConfig(config), TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET, ...env },
        ['--require', SCOPE_PROBE],
      );
      try {
        expect((await chat(gateway.url)).status).to.equal(200);
        await eventually(() => /"message":"request"/.test(gateway.output()));
      } finally {
        expect(await gateway.stop()).to.equal(0);
      }
      return gateway.output();
    }

    it('handles requests outside the scope, on the memory store', async () => {
      const output = await serveOneRequest(testConfigObject(upstream.url), { REDIS_URL: '' });
      expect(output).to.match(/"message":"request"[^\n]*"request_id":"req_/);
      expect(output).to.not.contain(SCOPE_ENTERED);
      // Its state went to a file of its own (spec/helpers/gateway-process.ts), not to the working tree's.
      const saved = /"message":"in-memory store state saved","file":"([^"]+)"/.exec(output);
      expect(saved?.[1].startsWith(path.join(os.tmpdir(), 'gw-state-')), saved?.[1]).to.equal(true);
    });

    it('handles requests outside the scope on Redis, and inside it when the store fails open', async () => {
      const prefix = uniqueRedisPrefix('scope');
      try {
        const env = { REDIS_URL: testRedisUrl(), REDIS_PREFIX: prefix };
        expect(await serveOneRequest(testConfigObject(upstream.url), env)).to.not.contain(SCOPE_ENTERED);
        expect(await serveOneRequest({ ...testConfigObject(upstream.url), store: { failOpen: true } }, env)).to.contain(SCOPE_ENTERED);
      } finally {
        await deleteRedisPrefix(prefix);
      }
    });
  });
});
