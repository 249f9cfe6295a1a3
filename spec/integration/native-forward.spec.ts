/**
 * The native route judges only what the gateway reads (the body is an object, `model`, `max_tokens`,
 * `stream`, `messages` an array). Everything else (roles, content block types, top-level fields,
 * betas, the query string, `anthropic-*` headers) reaches the upstream unchanged, and the upstream's
 * own 4xx reaches the client as the upstream wrote it.
 */
import { expect } from 'chai';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeMessage } from '../helpers/fake-upstream';
import { isNativeError, nativeHeaders, rawRequest } from '../helpers/http-client';

/** A body as Claude Code 2.1 sends it, plus parts no version of the API has (yet). */
const futureBody = {
  model: 'model-sonnet-4.6',
  max_tokens: 32000,
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'hello', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
    { role: 'system', content: 'Mid-conversation system text.' },
    { role: 'critic', content: [{ type: 'hologram', payload: { depth: 3, unicode: 'é✓', big: 1.5e300 } }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 'c2ln' },
        { type: 'redacted_thinking', data: 'abc' },
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'q' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
        { type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'x', server_name: 's', input: {} },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_1', content: [{ type: 'text', text: 'r' }] },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' } },
        { type: 'search_result', source: 'https://example.invalid', title: 't', content: [{ type: 'text', text: 's' }] },
      ],
    },
  ],
  system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
  thinking: { type: 'enabled', budget_tokens: 31999 },
  context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
  output_config: { effort: 'high' },
  metadata: { user_id: 'user_abc_account_x_session_y' },
  tools: [{ name: 'Bash', description: 'run', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }, { type: 'web_search_20250305', name: 'web_search' }],
  a_field_from_next_year: { nested: [1, 2, { deep: true }] },
};

const BETAS = 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,effort-2025-11-24';

describe('native route: forward-compatible', () => {
  let gw: TestGateway;
  before(async () => {
    // The native route forwards bodies unchanged; these tests send hand-made histories (made-up
    // thinking signatures) to see them arrive intact, so the upstream does not judge them.
    gw = await startTestGateway({ apiRules: false });
  });
  after(async () => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
    gw.upstream.setHandler((request) => ({ kind: 'json', body: nativeMessage('ok', undefined, request.body.model) }));
  });

  it('sends unknown roles, block types, fields, betas, the query string and anthropic-* headers upstream unchanged', async () => {
    const sent = JSON.stringify(futureBody);
    const reply = await rawRequest(gw.url, {
      path: '/v1/messages?beta=true',
      headers: [...nativeHeaders(), ['anthropic-beta', BETAS], ['anthropic-dangerous-direct-browser-access', 'true'], ['x-stainless-lang', 'js']],
      body: sent,
    });
    expect(reply.status, reply.text).to.equal(200);
    const [received] = gw.upstream.requests;
    expect(received.url).to.equal('/v1/messages?beta=true');
    expect(received.raw.toString('utf8')).to.equal(sent);
    expect(received.headers['anthropic-beta']).to.equal(BETAS);
    expect(received.headers['anthropic-dangerous-direct-browser-access']).to.equal('true');
    expect(received.headers['anthropic-version']).to.equal('2023-06-01');
    expect(received.headers['x-api-key']).to.not.equal(nativeHeaders()[1][1]);
  });

  it('renames an alias and keeps every other part of the body as sent', async () => {
    const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: { ...futureBody, model: 'sonnet' } });
    expect(reply.status, reply.text).to.equal(200);
    const [received] = gw.upstream.requests;
    expect(received.body).to.deep.equal({ ...futureBody, model: 'model-sonnet-4.6' });
    // Compact JSON in, compact JSON out: the unknown parts are the same bytes.
    expect(received.raw.toString('utf8')).to.include(JSON.stringify(futureBody.messages));
    expect(received.raw.toString('utf8')).to.include(JSON.stringify(futureBody.a_field_from_next_year));
  });

  it('a body naming a member twice goes upstream as the gateway judged it, never as sent', async () => {
    const sent = '{"model":"model-opus-4.8","messages":[{"role":"user","content":"hi"}],"model":"model-haiku-4.5","max_tokens":1}';
    const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(KEYS.haikuOnly), body: sent });
    expect(reply.status, reply.text).to.equal(200);
    const [received] = gw.upstream.requests;
    expect(received.raw.toString('utf8')).to.not.include('opus');
    expect(received.body).to.deep.equal({ model: 'model-haiku-4.5', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
  });

  it('count_tokens forwards unknown parts too', async () => {
    gw.upstream.setHandler(() => ({ kind: 'json', body: { input_tokens: 77 } }));
    const { max_tokens: _dropped, ...body } = futureBody;
    const reply = await rawRequest(gw.url, { path: '/v1/messages/count_tokens?beta=true', headers: [...nativeHeaders(), ['anthropic-beta', BETAS]], body });
    expect(reply.status, reply.text).to.equal(200);
    expect(reply.json).to.deep.equal({ input_tokens: 77 });
    expect(gw.upstream.requests[0].body).to.deep.equal(body);
    expect(gw.upstream.requests[0].url).to.equal('/v1/messages/count_tokens?beta=true');
  });

  it("relays the upstream's 400 as the upstream wrote it (status, body, request id header)", async () => {
    const upstreamError = { type: 'error', error: { type: 'invalid_request_error', message: 'messages.2.role: Input should be "user" or "assistant"' }, request_id: 'req_up_9' };
    gw.upstream.setHandler(() => ({ kind: 'json', status: 400, body: upstreamError, headers: { 'x-should-retry': 'false' } }));
    const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: futureBody });
    expect(reply.status).to.equal(400);
    expect(reply.json).to.deep.equal(upstreamError);
    expect(reply.headers['x-should-retry']).to.equal('false');
    expect(reply.headers['upstream-request-id']).to.equal('req_upstream_1');
    expect(gw.upstream.requests).to.have.length(1);
  });

  it('a deeply nested body is forwarded as sent, or refused with 400 when an alias must be renamed', async () => {
    const nested = '['.repeat(20_000) + ']'.repeat(20_000);
    const text = (model: string) => `{"model":"${model}","max_tokens":16,"messages":[{"role":"user","content":${nested}}]}`;
    const asSent = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: text('model-sonnet-4.6') });
    expect(asSent.status, asSent.text.slice(0, 200)).to.equal(200);
    expect(gw.upstream.requests[0].raw.toString('utf8')).to.equal(text('model-sonnet-4.6'));
    const renamed = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: text('sonnet') });
    expect(renamed.status).to.equal(400);
    expect(isNativeError(renamed.json)).to.equal(true);
    expect(renamed.json.error.message).to.match(/nested too deeply/);
    expect(gw.upstream.requests).to.have.length(1);
  });

  describe('what the gateway still judges: 400 in the native shape, nothing upstream', () => {
    const good = { model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
    const cases: Array<[string, string | object, RegExp]> = [
      ['a body that is not JSON', '{"model": "haiku",', /not valid JSON/],
      ['a body that is not an object', '[1, 2]', /must be a JSON object/],
      ['model missing', { ...good, model: undefined }, /^model: field required$/],
      ['model not a string', { ...good, model: 42 }, /^model: must be string$/],
      ['max_tokens missing', { ...good, max_tokens: undefined }, /^max_tokens: field required$/],
      ['max_tokens 0', { ...good, max_tokens: 0 }, /^max_tokens: must be >= 1$/],
      ['max_tokens not an integer', { ...good, max_tokens: 1.5 }, /^max_tokens: must be integer$/],
      ['stream not a boolean', { ...good, stream: 'yes' }, /^stream: must be boolean$/],
      ['messages not an array', { ...good, messages: 'hi' }, /^messages: must be array$/],
    ];
    for (const [name, body, message] of cases) {
      it(name, async () => {
        const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(), body: typeof body === 'string' ? body : JSON.stringify(body) });
        expect(reply.status).to.equal(400);
        expect(isNativeError(reply.json), reply.text).to.equal(true);
        expect(reply.json.error.type).to.equal('invalid_request_error');
        expect(reply.json.error.message).to.match(message);
        expect(gw.upstream.requests).to.have.length(0);
      });
    }
  });
});
