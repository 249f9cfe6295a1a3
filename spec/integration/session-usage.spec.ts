/**
 * Usage by agent session through the admin API (`/usage?groupBy=session`, `/requests?sessionId=`), on
 * both stores: the session ids of the native (Claude Code's header), chat (`prompt_cache_key`) and
 * Responses (Codex's header; the `previous_response_id` chain root) routes, their bounds, and that a
 * session's credits are the sum of its requests'. Needs the Redis server at REDIS_URL for the Redis half.
 */
import { expect } from 'chai';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { utcDay } from '../../lib/store/usage-days';

const handler: FakeHandler = (request) => ({ kind: 'json', body: nativeMessage('Hello', { input_tokens: 40, output_tokens: 10 }, request.body?.model) });
const SESSION = '5f0c7a9e-8d2b-4c1e-9a3f-1b2c3d4e5f60';
const units = (credits: number) => Math.round(credits * 1e9);

async function exportLog(gw: TestGateway, query: string): Promise<Array<Record<string, any>>> {
  const response = await fetch(`${gw.url}/admin/v1/requests?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const text = await response.text();
  return text.trim() === '' ? [] : text.trim().split('\n').map((line) => JSON.parse(line));
}

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`usage by agent session (${storeKind} store)`, function () {
    this.timeout(30_000);
    const prefix = uniqueRedisPrefix('sessions');
    let gw: TestGateway;
    const today = utcDay(Date.now());
    let chainRoot = '';

    before(async () => {
      gw = await startTestGateway({ handler, env: { ADMIN_TOKEN }, store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined });
      const messages = [{ role: 'user', content: 'Hi' }];
      const native = (extra: Array<[string, string]>, key = KEYS.all, model = 'sonnet') =>
        rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: [...nativeHeaders(key), ...extra], body: { model, max_tokens: 50, messages } });
      // Three turns of one Claude Code session, one of them from a subagent; the same id from another key.
      expect((await native([['x-claude-code-session-id', SESSION]])).status).to.equal(200);
      expect((await native([['x-claude-code-session-id', SESSION], ['x-claude-code-agent-id', 'agent-explore']])).status).to.equal(200);
      expect((await native([['x-claude-code-session-id', SESSION]])).status).to.equal(200);
      expect((await native([['x-claude-code-session-id', SESSION]], KEYS.haikuOnly, 'haiku')).status).to.equal(200);
      // A malformed id is ignored (the request is served, without a session).
      expect((await native([['x-claude-code-session-id', '=cmd|calc']])).status).to.equal(200);
      const chat = await rawRequest(gw.url, { method: 'POST', path: '/v1/chat/completions', headers: chatHeaders(), body: { model: 'sonnet', messages, prompt_cache_key: 'cache-key-7' } });
      expect(chat.status).to.equal(200);
      // A Responses chain without any session id: the chain root's response id.
      const first = await rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers: chatHeaders(), body: { model: 'sonnet', input: 'Hi' } });
      expect(first.status).to.equal(200);
      chainRoot = first.json.id;
      const second = await rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers: chatHeaders(), body: { model: 'sonnet', input: 'Again', previous_response_id: chainRoot } });
      expect(second.status).to.equal(200);
      const third = await rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers: chatHeaders(), body: { model: 'sonnet', input: 'More', previous_response_id: second.json.id } });
      expect(third.status).to.equal(200);
      // Codex's header on the Responses route.
      expect((await rawRequest(gw.url, { method: 'POST', path: '/v1/responses', headers: [...chatHeaders(), ['session-id', 'codex-sess-1']], body: { model: 'sonnet', input: 'Hi', store: false } })).status).to.equal(200);
      for (let i = 0; i < 100 && (await exportLog(gw, `from=${today}&to=${today}`)).length < 10; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    });
    after(async () => {
      await gw?.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('groups a Claude Code session\'s turns into one row whose credits are the sum of its requests', async () => {
      const usage = await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=session&keyId=team-all`);
      expect(usage.status).to.equal(200);
      const row = usage.body.rows.find((candidate: any) => candidate.sessionId === SESSION);
      expect(row).to.include({ keyId: 'team-all', requests: 3, inputTokens: 120, outputTokens: 30 });
      expect(row.agentIds).to.deep.equal(['agent-explore']);
      expect(row.models).to.deep.equal(['model-sonnet-4.6']);
      expect(row.durationMs).to.be.a('number').and.at.least(0);
      expect(Date.parse(row.end)).to.be.at.least(Date.parse(row.start));
      const records = await exportLog(gw, `from=${today}&to=${today}&sessionId=${SESSION}&keyId=team-all`);
      expect(records).to.have.length(3);
      expect(records.map((record) => record.agentId)).to.deep.equal([null, 'agent-explore', null]);
      expect(units(row.credits)).to.equal(records.reduce((sum, record) => sum + units(record.credits), 0));
      expect(row.credits).to.be.greaterThan(0);
    });

    it('keeps one session id sent by two keys as two sessions, one per key', async () => {
      const rows = (await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=session`)).body.rows as any[];
      const mine = rows.filter((row) => row.sessionId === SESSION).map((row) => [row.keyId, row.requests, row.models]);
      expect(mine).to.have.deep.members([['team-all', 3, ['model-sonnet-4.6']], ['team-haiku', 1, ['model-haiku-4.5']]]);
    });

    it('reads prompt_cache_key, Codex\'s session-id header and the Responses chain root; ignores a malformed id', async () => {
      const rows = (await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=session`)).body.rows as any[];
      const requestsOf = (id: string | null) => rows.find((row) => row.sessionId === id)?.requests;
      expect(requestsOf('cache-key-7')).to.equal(1);
      expect(requestsOf('codex-sess-1')).to.equal(1);
      expect(requestsOf(chainRoot)).to.equal(3);
      expect(requestsOf(null)).to.equal(1);
      const all = (await exportLog(gw, `from=${today}&to=${today}`)).map((record) => record.sessionId);
      expect(all).not.to.include('=cmd|calc');
    });

    it('names the session in the request\'s log line (session_id), and nothing for a request without one', async () => {
      const lines = gw.logLines.filter((line) => line.message === 'request' && line.route === 'POST /v1/messages' && line.status === 200);
      expect(lines.map((line) => line.session_id)).to.deep.equal([SESSION, SESSION, SESSION, SESSION, undefined]);
      expect(lines[4]).not.to.have.property('session_id');
      const codex = gw.logLines.find((line) => line.message === 'request' && line.session_id === 'codex-sess-1');
      expect(codex).to.include({ route: 'POST /v1/responses', status: 200 });
      expect(gw.logLines.some((line) => JSON.stringify(line).includes('=cmd|calc'))).to.equal(false);
    });

    it('sums the rows into the totals, and filters the export by session id', async () => {
      const usage = (await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=session`)).body;
      expect(usage.groupBy).to.equal('session');
      expect(usage.totals.requests).to.equal(usage.rows.reduce((sum: number, row: any) => sum + row.requests, 0));
      expect(units(usage.totals.credits)).to.equal(usage.rows.reduce((sum: number, row: any) => sum + units(row.credits), 0));
      expect(await exportLog(gw, `from=${today}&to=${today}&sessionId=nobody`)).to.deep.equal([]);
      const long = await admin(gw, 'GET', `/requests?sessionId=${'x'.repeat(201)}`);
      expect(long.status).to.equal(400);
      expect(long.body.error.message).to.match(/^sessionId: /);
    });
  });
}
