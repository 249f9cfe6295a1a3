/**
 * Spend visibility through the admin API, on both stores: usage by UTC day, the request log export,
 * and that the log's credits over a day equal the day's totals for whole, streamed, aborted and failed
 * requests. Needs the Redis server at REDIS_URL for the Redis half: fails (never skips) without it.
 */
import http from 'node:http';
import { expect } from 'chai';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { nativeMessage, nativeTextEvents, type FakeHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { utcDay } from '../../lib/store/usage-days';

const PROMPT = 'PROMPT-TEXT-THAT-MUST-NEVER-BE-KEPT';

/** Scripted by the prompt: `fail` -> 529, `abort` -> a stream that pauses after its first delta, else the default. */
const handler: FakeHandler = (request) => {
  const text = JSON.stringify(request.body);
  if (request.url.startsWith('/v1/messages/count_tokens')) return { kind: 'json', body: { input_tokens: 42 } };
  if (text.includes('fail')) return { kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } };
  if (text.includes('abort')) {
    const events = nativeTextEvents(['z'.repeat(400), 'never'], { input_tokens: 12, output_tokens: 300 }, request.body.model);
    return { kind: 'stream', events: [...events.slice(0, 4), { pauseMs: 5000 }, ...events.slice(4)] };
  }
  if (request.body?.stream) return { kind: 'stream', events: nativeTextEvents(['Hello', ', world'], { input_tokens: 21, output_tokens: 7 }, request.body.model) };
  return { kind: 'json', body: nativeMessage('Hello, world', { input_tokens: 33, output_tokens: 9 }, request.body?.model) };
};

/** Open a streamed request and drop the connection once the first delta arrived. */
function openAndAbort(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = new URL('/v1/messages', url);
    const req = http.request({ hostname: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: Object.fromEntries(nativeHeaders()) });
    req.once('response', (res) => {
      res.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('zzzz')) {
          req.destroy();
          resolve();
        }
      });
    });
    req.once('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
    req.end(JSON.stringify({ model: 'sonnet', max_tokens: 500, stream: true, messages: [{ role: 'user', content: `abort ${PROMPT}` }] }));
  });
}

async function exportLog(gw: TestGateway, query: string): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${gw.url}/admin/v1/requests?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

const units = (credits: number) => Math.round(credits * 1e9);

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`spend visibility through the admin API (${storeKind} store)`, function () {
    this.timeout(30_000);
    const prefix = uniqueRedisPrefix('spend');
    let gw: TestGateway;
    const today = utcDay(Date.now());

    before(async () => {
      gw = await startTestGateway({
        handler, env: { ADMIN_TOKEN }, store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined,
        upstream: { maxRetries: 0 },
      });
      const native = (body: object, key = KEYS.all) => rawRequest(gw.url, { method: 'POST', path: '/v1/messages', headers: nativeHeaders(key), body });
      const messages = [{ role: 'user', content: PROMPT }];
      expect((await native({ model: 'sonnet', max_tokens: 50, messages })).status).to.equal(200);
      expect((await native({ model: 'haiku', max_tokens: 50, messages }, KEYS.haikuOnly)).status).to.equal(200);
      expect((await native({ model: 'sonnet', max_tokens: 50, stream: true, messages })).status).to.equal(200);
      expect((await native({ model: 'sonnet', max_tokens: 50, messages: [{ role: 'user', content: `fail ${PROMPT}` }] })).status).to.equal(529);
      const chat = await rawRequest(gw.url, { method: 'POST', path: '/v1/chat/completions', headers: chatHeaders(), body: { model: 'opus', messages } });
      expect(chat.status).to.equal(200);
      expect((await rawRequest(gw.url, { method: 'POST', path: '/v1/messages/count_tokens', headers: nativeHeaders(), body: { model: 'sonnet', messages } })).status).to.equal(200);
      // Refused before the upstream: no log record.
      expect((await native({ model: 'sonnet', max_tokens: 50, messages }, KEYS.revoked)).status).to.equal(401);
      await openAndAbort(gw.url);
      // The finish steps run after each response closed: wait until all seven records are in.
      for (let i = 0; i < 100; i++) {
        if ((await exportLog(gw, `from=${today}&to=${today}`)).text.trim().split('\n').length >= 7) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    });
    after(async () => {
      await gw?.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('logs one record per request that reached the upstream: whole, streamed, failed, aborted, count_tokens; no content', async () => {
      const exported = await exportLog(gw, `from=${today}&to=${today}`);
      expect(exported.status).to.equal(200);
      expect(exported.type).to.match(/^application\/x-ndjson/);
      const records = exported.text.trim().split('\n').map((line) => JSON.parse(line));
      expect(records).to.have.length(7);
      expect(exported.text).not.to.include(PROMPT);
      expect(exported.text).not.to.include('Hello');
      expect(exported.text).not.to.include(KEYS.all);
      const byRoute = (route: string) => records.filter((record) => record.route === route);
      expect(byRoute('POST /v1/messages/count_tokens')).to.have.length(1);
      expect(byRoute('POST /v1/messages/count_tokens')[0]).to.include({ credits: 0, keyId: 'team-all' });
      expect(byRoute('POST /v1/chat/completions')[0]).to.include({ model: 'model-opus-4.8', status: 200, keyGroup: 'default' });
      const failed = records.find((record) => record.status === 529);
      expect(failed).to.include({ credits: 0, model: 'model-sonnet-4.6', streamed: false });
      const aborted = records.find((record) => record.clientAborted);
      expect(aborted).to.include({ streamed: true, inputTokens: 12, status: 200 });
      expect(aborted.credits).to.be.greaterThan(0);
      const streamed = records.find((record) => record.streamed && !record.clientAborted);
      expect(streamed).to.include({ inputTokens: 21, outputTokens: 7, stopReason: 'end_turn', status: 200 });
      expect(streamed.firstByteMs).to.be.a('number');
      expect(streamed.durationMs).to.be.at.least(streamed.firstByteMs);
      expect(new Date(streamed.time).toISOString().slice(0, 10)).to.equal(today);
      expect(records.find((record) => record.keyId === 'team-haiku')).to.include({ model: 'model-haiku-4.5', inputTokens: 33, outputTokens: 9 });
    });

    it("the log's credits over the day equal the day's usage totals, and the days add up to the month", async () => {
      const records = (await exportLog(gw, `from=${today}&to=${today}`)).text.trim().split('\n').map((line) => JSON.parse(line));
      const logged = records.reduce((sum, record) => sum + units(record.credits), 0);
      const usage = await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=day`);
      expect(usage.status).to.equal(200);
      expect(usage.body.rows).to.have.length(1);
      expect(units(usage.body.rows[0].credits)).to.equal(logged);
      expect(units(usage.body.totals.credits)).to.equal(logged);
      // count_tokens settles nothing: the ledger counts the six billed requests.
      expect(usage.body.totals.requests).to.equal(6);
      const keyUsage = await admin(gw, 'GET', '/keys/team-all/usage');
      const dayRows = keyUsage.body.days as Array<{ day: string; credits: number; requests: number }>;
      expect(dayRows.every((row) => row.day.startsWith(keyUsage.body.month))).to.equal(true);
      expect(dayRows.reduce((sum, row) => sum + units(row.credits), 0)).to.equal(units(keyUsage.body.totals.credits));
      expect(dayRows.reduce((sum, row) => sum + row.requests, 0)).to.equal(keyUsage.body.totals.requests);
    });

    it('groups by key and by model, and filters by key and model', async () => {
      const byKey = (await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=key`)).body;
      expect(byKey.rows.map((row: any) => [row.keyId, row.requests])).to.deep.equal([['team-all', 5], ['team-haiku', 1]]);
      const byModel = (await admin(gw, 'GET', `/usage?from=${today}&to=${today}&groupBy=model&keyId=team-all`)).body;
      expect(byModel.rows.map((row: any) => row.model).sort()).to.deep.equal(['model-opus-4.8', 'model-sonnet-4.6']);
      const haiku = (await admin(gw, 'GET', `/usage?from=${today}&to=${today}&model=model-haiku-4.5`)).body;
      expect(haiku.totals).to.include({ requests: 1, inputTokens: 33, outputTokens: 9 });
      const daily = (await admin(gw, 'GET', `/usage?to=${today}`)).body;
      expect(daily.rows).to.have.length(30);
      expect(daily.rows[29].models.map((row: any) => row.model)).to.include('model-haiku-4.5');
    });

    it('gives spend by key and by day in one call: groupBy=key,day, day,key or groupBy twice', async () => {
      const from = utcDay(Date.now() - 2 * 86_400_000);
      const answers = await Promise.all(['groupBy=key,day', 'groupBy=day,key', 'groupBy=key&groupBy=day'].map((grouping) => admin(gw, 'GET', `/usage?from=${from}&to=${today}&${grouping}`)));
      for (const answer of answers) {
        expect(answer.status).to.equal(200);
        expect(answer.body.groupBy).to.equal('key,day');
        expect(answer.body.rows).to.deep.equal(answers[0].body.rows);
      }
      const rows = answers[0].body.rows as Array<{ keyId: string; requests: number; credits: number; days: Array<{ day: string; requests: number; credits: number; models: Array<{ model: string }> }> }>;
      expect(rows.map((row) => [row.keyId, row.requests])).to.deep.equal([['team-all', 5], ['team-haiku', 1]]);
      for (const row of rows) {
        expect(row.days.map((day) => day.day)).to.deep.equal([from, utcDay(Date.now() - 86_400_000), today]);
        expect(row.days.slice(0, 2).map((day) => day.requests)).to.deep.equal([0, 0]);
        expect(units(row.days[2].credits)).to.equal(units(row.credits));
      }
      expect(rows[1].days[2].models.map((model) => model.model)).to.deep.equal(['model-haiku-4.5']);
    });

    it('exports CSV with a header, filtered by key and status', async () => {
      const csv = await exportLog(gw, `from=${today}&to=${today}&format=csv&keyId=team-all&status=529`);
      expect(csv.status).to.equal(200);
      expect(csv.type).to.match(/^text\/csv/);
      const lines = csv.text.trim().split('\r\n');
      expect(lines[0]).to.equal('time,requestId,keyId,keyGroup,route,model,status,stopReason,inputTokens,outputTokens,cacheCreationInputTokens,cacheReadInputTokens,credits,firstByteMs,durationMs,streamed,clientAborted,sessionId,agentId,upstreamTarget,errorType,errorMessage,upstreamAttempts');
      expect(lines).to.have.length(2);
      expect(lines[1]).to.match(/,team-all,default,POST \/v1\/messages,model-sonnet-4\.6,529,/);
    });

    it('answers bad parameters with a 400 naming the parameter', async () => {
      const cases: Array<[string, RegExp]> = [
        ['/usage?from=2025-02-30&to=2025-03-01', /^from: /],
        ['/usage?from=yesterday', /^from: /],
        ['/usage?from=2025-03-02&to=2025-03-01', /^from: .*after/],
        ['/usage?from=2024-01-01&to=2025-03-01', /^to: .*at most 400/],
        ['/usage?groupBy=week', /^groupBy: /],
        ['/usage?groupBy=key,model', /^groupBy: /],
        ['/usage?groupBy=day&groupBy=session', /^groupBy: /],
        ['/usage?groupBy=key&groupBy=day&groupBy=model', /^groupBy: /],
        ['/usage?keyId=a&keyId=b', /^keyId: /],
        ['/usage?colour=red', /^colour: unknown parameter/],
        ['/requests?format=xml', /^format: /],
        ['/requests?status=abc', /^status: /],
        ['/requests?to=2025-13-01', /^to: /],
      ];
      for (const [path, message] of cases) {
        const reply = await admin(gw, 'GET', path);
        expect(reply.status, path).to.equal(400);
        expect(reply.body.error.message, path).to.match(message);
      }
      expect((await admin(gw, 'GET', '/usage?keyId=nobody')).status).to.equal(404);
      expect((await admin(gw, 'GET', '/usage', undefined, 'wrong-token-000000000')).status).to.equal(401);
    });
  });
}
