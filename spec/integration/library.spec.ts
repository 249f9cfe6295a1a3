/** The library API: createGateway with overrides, mounting under a router, the hook points and their context. */
import http from 'node:http';
import { expect } from 'chai';
import express from 'express';
import { ConfigError, createGateway, GatewayError, type Gateway, type GatewayHookContext, type UsageRecord } from '../../lib';
import { createCapturingLogger, KEYS, UPSTREAM_SECRET } from '../helpers/gateway';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { TEST_KEYS } from '../helpers/library';
import { listenOnLoopback, type LoopbackServer } from '../../lib/http/loopback';

function listen(handler: http.RequestListener): Promise<LoopbackServer> {
  return listenOnLoopback(http.createServer(handler));
}

const nativeHeaders = { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
const messageBody = { model: 'sonnet', max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }] };

describe('library API', () => {
  let upstream: FakeUpstream;
  const opened: Array<{ close(): Promise<unknown> }> = [];

  before(async () => {
    upstream = await startFakeUpstream();
    process.env.TEST_UPSTREAM_API_KEY = UPSTREAM_SECRET;
  });
  afterEach(async () => {
    while (opened.length > 0) await opened.pop()!.close();
  });
  after(() => upstream.close());

  async function build(options: Parameters<typeof createGateway>[0] = {}): Promise<Gateway> {
    const gateway = await createGateway({
      logger: createCapturingLogger().logger,
      env: {},
      ...options,
      config: { upstream: { url: upstream.url, apiKeyEnv: 'TEST_UPSTREAM_API_KEY' }, keys: TEST_KEYS, ...options.config },
    });
    opened.push(gateway);
    return gateway;
  }

  it('builds an app from config.json with options overriding it, under the same validation', async () => {
    const gateway = await build({ config: { aliases: { fast: 'model-haiku-4.5' }, defaults: { maxTokens: 77 } } });
    expect(gateway.config.models.map((m) => m.id)).to.include('model-opus-5'); // from the shipped file
    expect(gateway.config.aliases).to.deep.equal({ fast: 'model-haiku-4.5' }); // replaced whole
    expect(gateway.config.defaults).to.deep.equal({ maxTokens: 77, rateLimitPerMinute: 60 }); // merged
    expect(gateway.config.upstream.timeoutMs).to.equal(600000); // merged with the file's upstream
    const server = await listen(gateway.app);
    opened.push(server);
    const reply = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: nativeHeaders, body: JSON.stringify({ ...messageBody, model: 'fast' }) });
    expect(reply.status).to.equal(200);
    expect((await reply.json() as any).model).to.equal('model-haiku-4.5');
    expect(upstream.requests.at(-1)!.headers['x-api-key']).to.equal(UPSTREAM_SECRET);
  });

  it('refuses invalid options with the ConfigError of config.json', async () => {
    let caught: unknown;
    try {
      await build({ config: { aliases: { fast: 'model-nope' } } });
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(ConfigError);
    expect((caught as Error).message).to.contain('aliases.fast').and.contain('model-nope');
  });

  it('mounts under a path of another app through its router', async () => {
    const gateway = await build();
    const parent = express();
    parent.get('/', (_req, res) => res.send('parent'));
    parent.use('/llm', gateway.router);
    const server = await listen(parent);
    opened.push(server);
    const models = await fetch(`${server.url}/llm/v1/models`, { headers: { 'x-api-key': KEYS.haikuOnly } });
    expect(models.status).to.equal(200);
    expect((await models.json() as any).data.map((m: { id: string }) => m.id)).to.deep.equal(['model-haiku-4.5']);
    const chat = await fetch(`${server.url}/llm/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(chat.status).to.equal(200);
    expect((await chat.json() as any).object).to.equal('chat.completion');
    expect(await (await fetch(`${server.url}/`)).text()).to.equal('parent');
  });

  it('runs afterAuth, beforeUpstream and onResponse in order with a read-only, typed context', async () => {
    const seen: Array<{ point: string; view: Record<string, unknown> }> = [];
    const snapshot = (ctx: GatewayHookContext) => ({
      requestId: ctx.requestId, routeFormat: ctx.routeFormat, keyId: ctx.keyId, keyGroup: ctx.keyGroup,
      model: ctx.model, upstreamModel: ctx.upstreamModel, requestedModel: ctx.requestedModel, stream: ctx.stream,
    });
    const records: UsageRecord[] = [];
    let writeError: unknown;
    const gateway = await build({
      hooks: {
        afterAuth: (ctx) => {
          seen.push({ point: 'afterAuth', view: snapshot(ctx) });
          try {
            (ctx as unknown as { keyId: string }).keyId = 'someone-else';
          } catch (err) {
            writeError = err;
          }
        },
        beforeUpstream: async (ctx, req) => {
          seen.push({ point: 'beforeUpstream', view: { ...snapshot(ctx), body: req.body.messages[0].content } });
          ctx.setTag('team', 'search');
        },
        onResponse: (record, ctx) => {
          records.push(record);
          seen.push({ point: 'onResponse', view: snapshot(ctx) });
        },
      },
    });
    const server = await listen(gateway.app);
    opened.push(server);
    const session = { 'x-claude-code-session-id': 'sess-42', 'x-claude-code-agent-id': 'agent-explore' };
    const reply = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { ...nativeHeaders, ...session }, body: JSON.stringify(messageBody) });
    expect(reply.status).to.equal(200);
    await reply.text();
    for (let i = 0; i < 50 && records.length === 0; i++) await new Promise((r) => setTimeout(r, 10));

    const requestId = reply.headers.get('request-id');
    expect(seen.map((s) => s.point)).to.deep.equal(['afterAuth', 'beforeUpstream', 'onResponse']);
    expect(seen[0].view).to.deep.include({ requestId, routeFormat: 'native', keyId: 'team-all', keyGroup: 'default', model: undefined });
    expect(seen[1].view).to.deep.include({ model: 'model-sonnet-4.6', upstreamModel: 'model-sonnet-4.6', requestedModel: 'sonnet', body: 'Hello' });
    expect(writeError).to.be.instanceOf(TypeError);
    expect(records[0]).to.deep.include({
      requestId, keyId: 'team-all', model: 'model-sonnet-4.6', status: 200, upstreamTarget: 'default', sessionId: 'sess-42', agentId: 'agent-explore', tags: { team: 'search' },
    });
    expect(records[0].usage).to.deep.include({ input_tokens: 10, output_tokens: 5 });
    expect(records[0].credits).to.be.closeTo((10 * 3 + 5 * 15) / 1e6, 1e-12);

    const plain = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: nativeHeaders, body: JSON.stringify(messageBody) });
    await plain.text();
    for (let i = 0; i < 50 && records.length === 1; i++) await new Promise((r) => setTimeout(r, 10));
    expect(records[1]).to.deep.include({ requestId: plain.headers.get('request-id'), sessionId: null, agentId: null });
  });

  it('renders a GatewayError thrown by a hook in the route format, and a crash as a 500', async () => {
    const gateway = await build({
      hooks: {
        afterAuth: (ctx) => {
          if (ctx.routeFormat === 'chat') throw new GatewayError(403, 'permission_error', 'not on Sundays', { chatCode: 'closed' });
          throw new Error('boom');
        },
      },
    });
    const server = await listen(gateway.app);
    opened.push(server);
    const chat = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(chat.status).to.equal(403);
    expect(await chat.json() as any).to.deep.equal({ error: { message: 'not on Sundays', type: 'permission_error', param: null, code: 'closed' } });
    const native = await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: nativeHeaders, body: JSON.stringify(messageBody) });
    expect(native.status).to.equal(500);
    expect((await native.json() as any).error.type).to.equal('api_error');
  });

  it('rejects a hook that is not a function at build time', async () => {
    let caught: unknown;
    try {
      await build({ hooks: { afterAuth: 'nope' as unknown as () => void } });
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(TypeError);
    expect((caught as Error).message).to.contain('hooks.afterAuth');
  });
});
