/**
 * Another key's file named at any depth of a Messages body (audit issue 40, high 3): an image block with
 * a `file_id` inside a document's `source.content`, inside a `tool_result`, a web fetch result, a code
 * execution result; on /v1/messages, count_tokens and in a batch, driven with the Anthropic SDK. Each is
 * refused 404 before the upstream, as the direct reference is; the owner's same request goes through.
 * A body nested 20,000 deep gets an answer (404 for the foreign file at its bottom), never a 500. The
 * translated routes take no `file_id` at all (the openai SDK's `file_id` parts are refused 400).
 * Both stores: the file pins live in the store.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import type { GatewayStore } from '../../lib/store/types';
import { createFakeBatches, type FakeBatches } from '../helpers/fake-batches';
import { createFakeFiles } from '../helpers/fake-files';
import { defaultHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, isChatError, isNativeError, nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const FILES_BETA = 'files-api-2025-04-14';

/** An image block naming a file, inside a document of custom content (`source.type: "content"`). */
function documentOfImage(fileId: string) {
  return { type: 'document' as const, source: { type: 'content' as const, content: [{ type: 'image' as const, source: { type: 'file' as const, file_id: fileId } }] } };
}

/** The places a file can be named below the top of a message's content, each a whole `messages` array. */
function nestedShapes(fileId: string): Record<string, any[]> {
  const ask = { role: 'user', content: 'Look at it.' };
  return {
    'an image in a document\'s source.content': [{ role: 'user', content: [documentOfImage(fileId), { type: 'text', text: 'Describe.' }] }],
    'the same inside a tool_result': [ask,
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'fetch_report', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [documentOfImage(fileId)] }] }],
    'a document of a web fetch result': [ask,
      { role: 'assistant', content: [
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_fetch', input: { url: 'https://example.com/report.pdf' } },
        { type: 'web_fetch_tool_result', tool_use_id: 'srvtoolu_1', content: { type: 'web_fetch_result', url: 'https://example.com/report.pdf', content: { type: 'document', source: { type: 'file', file_id: fileId } } } },
      ] }],
    'an output file of a code execution result': [ask,
      { role: 'assistant', content: [
        { type: 'server_tool_use', id: 'srvtoolu_2', name: 'code_execution', input: { code: 'print(1)' } },
        { type: 'code_execution_tool_result', tool_use_id: 'srvtoolu_2', content: { type: 'code_execution_result', stdout: '', stderr: '', return_code: 0, content: [{ type: 'code_execution_output', file_id: fileId }] } },
      ] }],
    'a container_upload block after a text block': [{ role: 'user', content: [{ type: 'text', text: 'Run it.' }, { type: 'container_upload', file_id: fileId }] }],
  };
}

/** `tool_result` blocks nested `depth` deep, `bottom` (a JSON text) innermost: the body as JSON text. */
function deepToolResults(depth: number, bottom: string, path: 'messages' | 'count_tokens' = 'messages'): string {
  const open = '{"type":"tool_result","tool_use_id":"toolu_1","content":['.repeat(depth);
  const close = ']}'.repeat(depth);
  const maxTokens = path === 'messages' ? '"max_tokens":16,' : '';
  return `{"model":"haiku",${maxTokens}"messages":[{"role":"user","content":"hi"},`
    + '{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},'
    + `{"role":"user","content":[${open}${bottom}${close}]}]}`;
}

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`file references at any depth (${storeKind} store)`, function () {
    this.timeout(30_000);
    const prefix = uniqueRedisPrefix('file-refs');
    let batches: FakeBatches;
    let gw: TestGateway;
    let fileId: string;
    const sdk = (key: string) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });

    before(async () => {
      batches = createFakeBatches(defaultHandler);
      const files = createFakeFiles(batches.handler);
      const store: GatewayStore | undefined = storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined;
      gw = await startTestGateway({ handler: files.handler, store, overrides: { limits: { bodyBytes: 4 * 1024 * 1024 } } });
      const uploaded = await sdk(KEYS.all).beta.files.upload({ file: await toFile(Buffer.from('the quarterly report'), 'report.txt', { type: 'text/plain' }) });
      fileId = uploaded.id;
    });
    after(async () => {
      await gw?.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('another key naming the file below the top of a message is refused 404 on /v1/messages, before the upstream; the owner is served', async () => {
      for (const [where, messages] of Object.entries(nestedShapes(fileId))) {
        const before = gw.upstream.requests.length;
        const refused = await sdk(KEYS.haikuOnly).beta.messages.create({ model: 'haiku', max_tokens: 16, betas: [FILES_BETA], messages }).catch((err) => err);
        expect(refused, where).to.be.instanceOf(Anthropic.NotFoundError);
        expect(refused.message, where).to.include(fileId);
        expect(gw.upstream.requests.length, where).to.equal(before);
      }
      const [owned] = Object.values(nestedShapes(fileId));
      const served = await sdk(KEYS.all).beta.messages.create({ model: 'haiku', max_tokens: 16, betas: [FILES_BETA], messages: owned as any });
      expect(served.type).to.equal('message');
      expect(gw.upstream.requests.at(-1)!.body.messages[0].content[0].source.content[0].source.file_id).to.equal(fileId);
    });

    it('a member name with escaped letters (fil\\u0065_id) is the same file_id: refused 404 for another key', async () => {
      const body = `{"model":"haiku","max_tokens":16,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"image","source":{"type":"file","fil\\u0065_id":"${fileId}"}}]}}]}]}`;
      const before = gw.upstream.requests.length;
      const reply = await rawRequest(gw.url, { path: '/v1/messages', headers: nativeHeaders(KEYS.haikuOnly), body });
      expect(reply.status, reply.text.slice(0, 200)).to.equal(404);
      expect(isNativeError(reply.json)).to.equal(true);
      expect(gw.upstream.requests.length).to.equal(before);
    });

    it('count_tokens refuses the same nested references of another key with 404', async () => {
      for (const [where, messages] of Object.entries(nestedShapes(fileId))) {
        const before = gw.upstream.requests.length;
        const refused = await sdk(KEYS.haikuOnly).beta.messages.countTokens({ model: 'haiku', betas: [FILES_BETA], messages }).catch((err) => err);
        expect(refused, where).to.be.instanceOf(Anthropic.NotFoundError);
        expect(gw.upstream.requests.length, where).to.equal(before);
      }
    });

    it('a batch naming another key\'s file in a nested block is refused 404 and never created upstream', async () => {
      for (const [where, messages] of Object.entries(nestedShapes(fileId))) {
        const created = batches.created.size;
        const refused = await sdk(KEYS.haikuOnly).beta.messages.batches.create({
          betas: [FILES_BETA],
          requests: [
            { custom_id: 'plain', params: { model: 'haiku', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] } },
            { custom_id: 'nested', params: { model: 'haiku', max_tokens: 16, messages } },
          ],
        }).catch((err) => err);
        expect(refused, where).to.be.instanceOf(Anthropic.NotFoundError);
        expect(refused.message, where).to.match(/requests\.1/);
        expect(batches.created.size, where).to.equal(created);
      }
    });

    it('a tool\'s own arguments naming a file_id are not a file reference', async () => {
      const served = await sdk(KEYS.haikuOnly).messages.create({
        model: 'haiku', max_tokens: 16,
        tools: [{ name: 'summarise_file', input_schema: { type: 'object', properties: { file_id: { type: 'string' } } } }],
        messages: [
          { role: 'user', content: 'Summarise the file.' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'summarise_file', input: { file_id: 'file_of_some_other_system' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'done' }] },
        ],
      });
      expect(served.type).to.equal('message');
    });

    it('the translated routes send no file_id upstream: the openai SDK\'s file_id parts are refused 400', async () => {
      const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.haikuOnly, maxRetries: 0 });
      const before = gw.upstream.requests.length;
      const refusals = [
        await openai.chat.completions.create({ model: 'haiku', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: fileId } }] }] }).catch((err) => err),
        await openai.responses.create({ model: 'haiku', input: [{ role: 'user', content: [{ type: 'input_file', file_id: fileId }] }] }).catch((err) => err),
        await openai.responses.create({ model: 'haiku', input: [{ role: 'user', content: [{ type: 'input_image', file_id: fileId, detail: 'auto' }] }] }).catch((err) => err),
        await openai.responses.create({ model: 'haiku', input: [
          { type: 'function_call', call_id: 'call_1', name: 'fetch_report', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_1', output: [{ type: 'input_file', file_id: fileId }] },
        ] }).catch((err) => err),
      ];
      for (const refused of refusals) {
        expect(refused).to.be.instanceOf(OpenAI.BadRequestError);
        expect(refused.message).to.match(/file_id is not supported|file parts are supported only/);
      }
      expect(gw.upstream.requests.length).to.equal(before);
    });

    it('20,000 tool_results deep: another key\'s file at the bottom is refused 404, on /v1/messages, count_tokens and in a batch', async () => {
      const bottom = JSON.stringify(documentOfImage(fileId));
      const before = gw.upstream.requests.length;
      for (const path of ['messages', 'count_tokens'] as const) {
        const reply = await rawRequest(gw.url, { path: `/v1/${path === 'messages' ? 'messages' : 'messages/count_tokens'}`, headers: nativeHeaders(KEYS.haikuOnly), body: deepToolResults(20_000, bottom, path) });
        expect(reply.status, `${path}: ${reply.text.slice(0, 200)}`).to.equal(404);
        expect(isNativeError(reply.json), path).to.equal(true);
      }
      const batch = `{"requests":[{"custom_id":"deep","params":${deepToolResults(20_000, bottom)}}]}`;
      const reply = await rawRequest(gw.url, { path: '/v1/messages/batches', headers: nativeHeaders(KEYS.haikuOnly), body: batch });
      // The batch's worst case is judged before its files (lib/billing/worst-case.ts): a 400 there when
      // the estimate cannot take the nesting, else the file check's 404.
      if (reply.status === 400) expect(reply.json.error.message).to.equal('request body is nested too deeply');
      else expect(reply.status, reply.text.slice(0, 200)).to.equal(404);
      expect(isNativeError(reply.json)).to.equal(true);
      expect(gw.upstream.requests.length).to.equal(before);
    });

    it('20,000 tool_results deep with no file: an answer in the route\'s shape, never a 500', async () => {
      const bottom = '{"type":"text","text":"the end"}';
      const native = [
        { path: '/v1/messages', body: deepToolResults(20_000, bottom) },
        { path: '/v1/messages/count_tokens', body: deepToolResults(20_000, bottom, 'count_tokens') },
        { path: '/v1/messages/batches', body: `{"requests":[{"custom_id":"deep","params":${deepToolResults(20_000, bottom)}}]}` },
      ];
      for (const { path, body } of native) {
        const reply = await rawRequest(gw.url, { path, headers: nativeHeaders(KEYS.haikuOnly), body });
        expect(reply.status, `${path}: ${reply.text.slice(0, 200)}`).to.be.oneOf([200, 400]);
        if (reply.status === 400) expect(isNativeError(reply.json), path).to.equal(true);
      }
      // The translated routes: content parts nested 20,000 deep.
      const deep = '{"type":"text","text":"x","extra":['.repeat(20_000) + ']}'.repeat(20_000);
      const translated = [
        { path: '/v1/chat/completions', body: `{"model":"haiku","messages":[{"role":"user","content":[${deep}]}]}` },
        { path: '/v1/responses', body: `{"model":"haiku","input":[{"role":"user","content":[${deep}]}]}` },
      ];
      for (const { path, body } of translated) {
        const reply = await rawRequest(gw.url, { path, headers: chatHeaders(KEYS.haikuOnly), body });
        expect(reply.status, `${path}: ${reply.text.slice(0, 200)}`).to.be.oneOf([200, 400]);
        if (reply.status === 400) expect(isChatError(reply.json), path).to.equal(true);
      }
      expect((await rawRequest(gw.url, { method: 'GET', path: '/healthz' })).status).to.equal(200);
    });
  });
}
