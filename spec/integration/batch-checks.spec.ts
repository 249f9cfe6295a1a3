/**
 * What a Message Batches create costs the store before it is judged (issue 40, open part 7): a batch
 * whose shape is wrong is refused before any file is looked up; the files all its requests name are
 * read in one store call (not one per file or per request); the 402's words are put together only on
 * the refusal path. Through the Anthropic SDK, on both stores (the store wrapped to count its calls).
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import * as worstCase from '../../lib/billing/worst-case';
import { MemoryStore } from '../../lib/store/memory-store';
import type { GatewayStore } from '../../lib/store/types';
import { createFakeBatches } from '../helpers/fake-batches';
import { createFakeFiles } from '../helpers/fake-files';
import { defaultHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

const CAPPED = 'sk-cs4-test-batch-checks-cap-0040';
const FILES_BETA = 'files-api-2025-04-14';

/** `store`, counting the calls that read pins (by method name). */
function countingPins(store: GatewayStore, calls: Record<string, number>): GatewayStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name !== 'getPin' && name !== 'getPins') return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => {
        calls[name] = (calls[name] ?? 0) + 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

for (const kind of ['memory', 'redis'] as const) {
  describe(`Message Batches create: shape first, one store call for its files (${kind} store)`, function () {
    this.timeout(30_000);
    const prefix = uniqueRedisPrefix('batch-checks');
    const calls: Record<string, number> = {};
    let gw: TestGateway;
    let fileIds: string[];
    const sdk = (key: string) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });
    const document = (id: string) => ({ type: 'document' as const, source: { type: 'file' as const, file_id: id } });
    const requestNaming = (i: number, ids: string[]) => ({
      custom_id: `r${i}`, params: { model: 'haiku', max_tokens: 16, messages: [{ role: 'user' as const, content: [...ids.map(document), { type: 'text' as const, text: 'summarise' }] }] },
    });

    before(async () => {
      const batches = createFakeBatches(defaultHandler);
      const files = createFakeFiles(batches.handler);
      const inner: GatewayStore = kind === 'redis' ? await connectTestRedisStore(prefix) : new MemoryStore();
      gw = await startTestGateway({
        handler: files.handler, store: countingPins(inner, calls),
        overrides: { keys: [{ id: 'team-all', key: KEYS.all, rateLimitPerMinute: 100_000 }, { id: 'capped', key: CAPPED, rateLimitPerMinute: 100_000, monthlyCreditCap: 0.01 }] },
      });
      fileIds = [];
      for (const key of [KEYS.all, CAPPED]) {
        for (let i = 0; i < 3; i++) {
          fileIds.push((await sdk(key).beta.files.upload({ file: await toFile(Buffer.from(`note ${i}`), `n${i}.txt`, { type: 'text/plain' }) })).id);
        }
      }
    });
    after(async () => {
      await gw?.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });
    const reset = () => Object.keys(calls).forEach((name) => delete calls[name]);

    it('a malformed batch naming files is a 400 without a single file lookup', async () => {
      reset();
      const batch = { requests: [requestNaming(0, fileIds.slice(0, 3)), { params: { model: 'haiku', max_tokens: 16, messages: [] } }] };
      const reply = await rawRequest(gw.url, { path: '/v1/messages/batches', headers: [...nativeHeaders(KEYS.all), ['anthropic-beta', FILES_BETA]], body: JSON.stringify(batch) });
      expect(reply.status, reply.text.slice(0, 200)).to.equal(400);
      expect(reply.json.error.message).to.include('requests.1');
      expect(calls).to.deep.equal({});
    });

    it('the files of every request of a batch are read in one store call', async () => {
      reset();
      const requests = Array.from({ length: 20 }, (_, i) => requestNaming(i, fileIds.slice(0, 3)));
      const created = await sdk(KEYS.all).beta.messages.batches.create({ requests, betas: [FILES_BETA] });
      expect(created.id).to.be.a('string');
      expect(calls).to.deep.equal({ getPins: 1 });
      // Another key's file among them: still one call, and a 404 naming the request.
      reset();
      const foreign = await sdk(KEYS.all).beta.messages.batches.create({ requests: [requestNaming(0, fileIds.slice(0, 1)), requestNaming(1, [fileIds[4]])], betas: [FILES_BETA] }).catch((err) => err);
      expect(foreign).to.be.instanceOf(Anthropic.NotFoundError);
      expect(foreign.message).to.include('requests.1: file_id');
      expect(calls).to.deep.equal({ getPins: 1 });
    });

    it('the 402 names the largest request, its words made only when it is sent', async () => {
      const original = worstCase.describeWorstCase;
      let described = 0;
      (worstCase as { describeWorstCase: typeof original }).describeWorstCase = (...args) => {
        described += 1;
        return original(...args);
      };
      try {
        await sdk(KEYS.all).beta.messages.batches.create({ requests: [requestNaming(0, fileIds.slice(0, 2))], betas: [FILES_BETA] });
        expect(described, 'an admitted batch').to.equal(0);
        const refused = await sdk(CAPPED).beta.messages.batches.create({
          requests: [requestNaming(0, []), requestNaming(1, fileIds.slice(3, 6)), { ...requestNaming(2, []), params: { ...requestNaming(2, []).params, max_tokens: 64_000 } }],
          betas: [FILES_BETA],
        }).catch((err) => err);
        expect(refused.status).to.equal(402);
        expect(refused.message).to.include('its largest request requests.2: input bound');
        expect(described, 'a refused batch').to.equal(1);
      } finally {
        (worstCase as { describeWorstCase: typeof original }).describeWorstCase = original;
      }
    });
  });
}
