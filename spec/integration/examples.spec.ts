/** The two examples of examples/, run against a real gateway and a fake upstream. */
import { expect } from 'chai';
import OpenAI from 'openai';
import { createPromptBlocker, collectPromptText } from '../../examples/prompt-blocker';
import { createTenantTagging } from '../../examples/tenant-tag';
import type { UsageRecord } from '../../lib';
import { KEYS } from '../helpers/gateway';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { eventually, startLibraryGateway, type LibraryGateway } from '../helpers/library';

const nativeHeaders = (extra: Record<string, string> = {}) => ({ 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...extra });
const chatHeaders = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json', ...extra });

describe('examples', () => {
  let upstream: FakeUpstream;
  let gw: LibraryGateway | undefined;
  before(async () => {
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
  });
  after(() => upstream.close());

  describe('tenant tag (examples/tenant-tag.ts)', () => {
    let records: Array<UsageRecord & { tenant: string }>;
    beforeEach(async () => {
      records = [];
      gw = await startLibraryGateway(upstream.url, { hooks: createTenantTagging({ header: 'x-tenant', onRecord: (r) => void records.push(r) }) });
    });

    it('adds the tenant of the header to the usage records of both routes, streams included', async () => {
      const native = await fetch(`${gw!.url}/v1/messages`, {
        method: 'POST', headers: nativeHeaders({ 'x-tenant': 'acme' }),
        body: JSON.stringify({ model: 'haiku', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(native.status).to.equal(200);
      await native.text();
      const chat = await fetch(`${gw!.url}/v1/chat/completions`, {
        method: 'POST', headers: chatHeaders({ 'x-tenant': 'globex' }),
        body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(chat.status).to.equal(200);
      await chat.json();
      await eventually(() => records.length === 2);
      const byTenant = Object.fromEntries(records.map((r) => [r.tenant, r]));
      expect(byTenant.acme).to.deep.include({ model: 'model-haiku-4.5', keyId: 'team-all', stream: true, status: 200 });
      expect(byTenant.acme.usage).to.deep.include({ input_tokens: 10, output_tokens: 5 });
      expect(byTenant.acme.credits).to.be.greaterThan(0);
      expect(byTenant.globex).to.deep.include({ model: 'model-sonnet-4.6', routeFormat: 'chat' });
      // The request's log line carries the tag too.
      await eventually(() => gw!.logLines.filter((l) => l.message === 'request').length === 2);
      const line = gw!.logLines.find((l) => l.message === 'request' && l.request_id === native.headers.get('request-id'));
      expect(line?.tags).to.deep.equal({ tenant: 'acme' });
    });

    it('tags requests without the header with the fallback tenant', async () => {
      const reply = await fetch(`${gw!.url}/v1/models`, { headers: { 'x-api-key': KEYS.all } });
      expect(reply.status).to.equal(200);
      await eventually(() => records.length === 1);
      expect(records[0].tenant).to.equal('unassigned');
    });

    it('refuses a malformed tenant header with a 400 in the route format', async () => {
      const native = await fetch(`${gw!.url}/v1/messages`, {
        method: 'POST', headers: nativeHeaders({ 'x-tenant': 'no spaces allowed' }),
        body: JSON.stringify({ model: 'haiku', max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(native.status).to.equal(400);
      const body = await native.json() as any;
      expect(body.type).to.equal('error');
      expect(body.error.type).to.equal('invalid_request_error');
      expect(body.error.message).to.contain('x-tenant');
    });
  });

  describe('prompt blocker (examples/prompt-blocker.ts)', () => {
    beforeEach(async () => {
      gw = await startLibraryGateway(upstream.url, { hooks: createPromptBlocker({ patterns: [/\bpassword\b/i] }) });
    });

    it('refuses a matching native request with a native error, before the upstream', async () => {
      const before = upstream.requests.length;
      const reply = await fetch(`${gw!.url}/v1/messages`, {
        method: 'POST', headers: nativeHeaders(),
        body: JSON.stringify({ model: 'haiku', max_tokens: 20, stream: true, system: 'be nice', messages: [{ role: 'user', content: [{ type: 'text', text: 'my PASSWORD is hunter2' }] }] }),
      });
      expect(reply.status).to.equal(400);
      expect(reply.headers.get('content-type')).to.match(/application\/json/);
      const body = await reply.json() as any;
      expect(body).to.deep.include({ type: 'error', request_id: reply.headers.get('request-id') });
      expect(body.error).to.deep.equal({ type: 'invalid_request_error', message: 'this request was blocked by the content policy of this gateway' });
      expect(upstream.requests.length).to.equal(before);
    });

    it('refuses a matching chat request with a chat error the openai SDK raises', async () => {
      const client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw!.url}/v1`, maxRetries: 0 });
      let caught: any;
      try {
        await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'what is the password?' }] });
      } catch (err) {
        caught = err;
      }
      expect(caught).to.be.instanceOf(OpenAI.BadRequestError);
      expect(caught.code).to.equal('content_policy_violation');
      expect(caught.param).to.equal('messages');
    });

    it('refuses a matching Responses request (in an input item or the instructions), before the upstream', async () => {
      const client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw!.url}/v1`, maxRetries: 0 });
      const before = upstream.requests.length;
      for (const request of [
        { model: 'sonnet', input: [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: 'my password is hunter2' }] }] },
        { model: 'sonnet', instructions: 'Reveal the password.', input: 'hi' },
        { model: 'sonnet', input: [{ type: 'function_call_output' as const, call_id: 'c', output: 'password: x' }] },
      ]) {
        const caught = await client.responses.create(request).catch((err: unknown) => err);
        expect(caught).to.be.instanceOf(OpenAI.BadRequestError);
        expect((caught as { code: string }).code).to.equal('content_policy_violation');
      }
      expect(upstream.requests.length).to.equal(before);
    });

    it('lets other prompts through', async () => {
      const client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw!.url}/v1`, maxRetries: 0 });
      const completion = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'passwords are fine in plural' }] });
      expect(completion.choices[0].message.content).to.equal('Hello, world');
    });

    it('reads every prompt text of both formats', () => {
      expect(collectPromptText({
        system: [{ type: 'text', text: 's' }],
        messages: [
          { role: 'user', content: 'a' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'b' }] }, { type: 'image', source: {} }] },
          { role: 'assistant', content: null },
        ],
      })).to.deep.equal(['s', 'a', 'b']);
    });
  });
});
