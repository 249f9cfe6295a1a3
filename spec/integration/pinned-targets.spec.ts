/**
 * Message Batches and Files with several upstream targets (config `upstream.targets`), driven with the
 * Anthropic SDK: each target stands for one upstream account, which knows only the batches and files
 * made in it and answers 404 for the others' (as the real API answers an id of another workspace,
 * https://docs.anthropic.com/en/api/errors: "not_found_error: The requested resource was not found").
 * A batch or file is created on the target the weights choose, then every later call about it goes to
 * that target only; a Messages request or batch naming files goes to the target holding them. When that
 * target is gone from the config, the call is refused 502, not sent to another account.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { MemoryStore } from '../../lib/store/memory-store';
import { createFakeBatches, type FakeBatches } from '../helpers/fake-batches';
import { createFakeFiles } from '../helpers/fake-files';
import { defaultHandler, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS } from '../helpers/gateway';
import { startPoolGateway, type PoolGateway } from '../helpers/pool-gateway';

/** One upstream account: its batches and files, ids starting with its own prefix. */
interface Account {
  fake: FakeUpstream;
  batches: FakeBatches;
}

describe('Message Batches and Files stay on the upstream target that holds them', function () {
  this.timeout(30_000);
  const started: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((item) => item.close()));
  });

  async function account(name: string): Promise<Account> {
    const batches = createFakeBatches(defaultHandler, `msgbatch_${name}_`);
    const files = createFakeFiles(batches.handler, `file_${name}_`);
    const fake = await startFakeUpstream(files.handler);
    started.push(fake);
    return { fake, batches };
  }
  async function gateway(accounts: Record<string, Account>, store: MemoryStore): Promise<PoolGateway> {
    const gw = await startPoolGateway(Object.entries(accounts).map(([id, { fake }]) => ({ id, url: fake.url })), {}, store);
    started.unshift(gw);
    return gw;
  }
  const sdk = (gw: PoolGateway) => new Anthropic({ apiKey: KEYS.all, baseURL: gw.url, maxRetries: 0 });
  const request = (i: number) => ({ custom_id: `q-${i}`, params: { model: 'haiku', max_tokens: 16, messages: [{ role: 'user' as const, content: `question ${i}` }] } });
  /** Paths of the requests an account received about `id`. */
  const callsAbout = (target: Account, id: string) => target.fake.requests.filter((r) => r.url.includes(id)).map((r) => `${r.method} ${r.url.replace(/\?.*$/, '')}`);

  it('retrieves, cancels, reads the results of and deletes each batch on the target that created it', async () => {
    const accounts = { a: await account('a'), b: await account('b') };
    const client = sdk(await gateway(accounts, new MemoryStore()));
    const created = [];
    for (let i = 0; i < 4; i++) created.push(await client.messages.batches.create({ requests: [request(i)] }));
    // Equal weights: the creations were spread over both accounts.
    expect(created.map((batch) => batch.id.split('_')[1]).sort()).to.deep.equal(['a', 'a', 'b', 'b']);

    for (const batch of created) expect((await client.messages.batches.retrieve(batch.id)).id).to.equal(batch.id);
    expect((await client.messages.batches.cancel(created[0].id)).processing_status).to.equal('canceling');
    accounts.a.batches.end();
    accounts.b.batches.end();
    for (const batch of created.slice(1)) {
      const results = [];
      for await (const entry of await client.messages.batches.results(batch.id)) results.push(entry.result.type);
      expect(results).to.deep.equal(['succeeded']);
      expect((await client.messages.batches.delete(batch.id)).type).to.equal('message_batch_deleted');
    }
    for (const batch of created) {
      const [home, other] = batch.id.startsWith('msgbatch_a_') ? [accounts.a, accounts.b] : [accounts.b, accounts.a];
      expect(callsAbout(other, batch.id)).to.deep.equal([]);
      expect(callsAbout(home, batch.id)).to.include(`GET /v1/messages/batches/${batch.id}`);
    }
  });

  it('reads the metadata of, downloads and deletes each file on the target it was uploaded to', async () => {
    const accounts = { a: await account('a'), b: await account('b') };
    const client = sdk(await gateway(accounts, new MemoryStore()));
    const uploaded = [];
    for (let i = 0; i < 4; i++) uploaded.push(await client.beta.files.upload({ file: await toFile(Buffer.from(`report ${i}`), `r${i}.txt`, { type: 'text/plain' }) }));
    expect(uploaded.map((file) => file.id.split('_')[1]).sort()).to.deep.equal(['a', 'a', 'b', 'b']);
    for (const file of uploaded) {
      expect((await client.beta.files.retrieveMetadata(file.id)).id).to.equal(file.id);
      // The account holding the file answers (it refuses to download an uploaded file, as the real API), not 404.
      expect(await client.beta.files.download(file.id).catch((err) => err)).to.be.instanceOf(Anthropic.BadRequestError);
      expect((await client.beta.files.delete(file.id)).id).to.equal(file.id);
      const other = file.id.startsWith('file_a_') ? accounts.b : accounts.a;
      expect(callsAbout(other, file.id)).to.deep.equal([]);
    }
  });

  it('lists the batches of the pages after the first on the target of the first (the after_id cursor\'s account)', async () => {
    const accounts = { a: await account('a'), b: await account('b') };
    const client = sdk(await gateway(accounts, new MemoryStore()));
    for (let i = 0; i < 4; i++) await client.messages.batches.create({ requests: [request(i)] });
    const listed = [];
    for await (const batch of client.messages.batches.list({ limit: 1 })) listed.push(batch.id);
    // The first page comes from the target the weights chose; the SDK's next page (after_id) from the same one.
    expect(listed).to.have.length(2);
    expect(new Set(listed.map((id) => id.split('_')[1])).size).to.equal(1);
    const lists = (target: Account) => target.fake.requests.filter((r) => r.method === 'GET' && r.url.startsWith('/v1/messages/batches?')).length;
    expect([lists(accounts.a), lists(accounts.b)].sort()).to.deep.equal([0, 2]);
  });

  it('creates a batch once when its target stalls the head past the head timeout: 504, never created in another account', async () => {
    const accounts = { a: await account('a'), b: await account('b') };
    // Account a creates the batch (the work is done) and answers only after the gateway's head timeout.
    const creates = accounts.a.batches.handler;
    accounts.a.fake.setHandler((request) => {
      const reply = creates(request);
      return request.method === 'POST' && reply.kind === 'json' ? { ...reply, delayMs: 1000 } : reply;
    });
    const gw = await startPoolGateway([{ id: 'a', url: accounts.a.fake.url, weight: 100 }, { id: 'b', url: accounts.b.fake.url }], { timeoutMs: 300 }, new MemoryStore());
    started.unshift(gw);
    const error = await sdk(gw).messages.batches.create({ requests: [request(0)] }).catch((err) => err);
    expect(error).to.be.instanceOf(Anthropic.APIError);
    expect(error.status).to.equal(504);
    const creations = (target: Account) => target.fake.requests.filter((r) => r.method === 'POST' && r.url === '/v1/messages/batches').length;
    expect([creations(accounts.a), creations(accounts.b)]).to.deep.equal([1, 0]);
  });

  it('refuses a call about a batch or file whose target is gone from the config (502), sending it to no other account', async () => {
    const accounts = { a: await account('a'), b: await account('b') };
    const store = new MemoryStore();
    const first = sdk(await gateway(accounts, store));
    const batches = [await first.messages.batches.create({ requests: [request(0)] }), await first.messages.batches.create({ requests: [request(1)] })];
    const files = [];
    for (let i = 0; i < 2; i++) files.push(await first.beta.files.upload({ file: await toFile(Buffer.from(`r${i}`), `r${i}.txt`, { type: 'text/plain' }) }));
    const onB = [batches.find((batch) => batch.id.startsWith('msgbatch_b_'))!, files.find((file) => file.id.startsWith('file_b_'))!];
    const onA = [batches.find((batch) => batch.id.startsWith('msgbatch_a_'))!, files.find((file) => file.id.startsWith('file_a_'))!];
    await started.shift()!.close();

    const second = sdk(await gateway({ a: accounts.a }, store));
    const before = accounts.a.fake.requests.length;
    const refused = await second.messages.batches.retrieve(onB[0].id).catch((err) => err);
    expect(refused).to.be.instanceOf(Anthropic.InternalServerError);
    expect(refused.status).to.equal(502);
    expect(refused.error.error).to.deep.include({ type: 'api_error' });
    expect(refused.error.error.message).to.include('upstream target "b"');
    expect((await second.beta.files.retrieveMetadata(onB[1].id).catch((err) => err)).status).to.equal(502);
    expect(accounts.a.fake.requests.length).to.equal(before);
    // The objects of the target still configured are reached as before.
    expect((await second.messages.batches.retrieve(onA[0].id)).id).to.equal(onA[0].id);
    expect((await second.beta.files.retrieveMetadata(onA[1].id)).id).to.equal(onA[1].id);
  });

  it('sends a Messages request, a token count and a batch naming files to the target holding them; files of two targets in one request are refused (400)', async () => {
    const accounts = { a: await account('a'), b: await account('b') };
    const client = sdk(await gateway(accounts, new MemoryStore()));
    const files = [];
    for (let i = 0; i < 2; i++) files.push(await client.beta.files.upload({ file: await toFile(Buffer.from(`r${i}`), `r${i}.txt`, { type: 'text/plain' }) }));
    const onA = files.find((file) => file.id.startsWith('file_a_'))!;
    const onB = files.find((file) => file.id.startsWith('file_b_'))!;
    const naming = (...ids: string[]) => [{ role: 'user' as const, content: [...ids.map((file_id) => ({ type: 'document' as const, source: { type: 'file' as const, file_id } })), { type: 'text' as const, text: 'Summarise.' }] }];
    const sentTo = (target: Account, path: string, id: string) => target.fake.requests.filter((r) => r.url.replace(/\?.*$/, '') === path && JSON.stringify(r.body).includes(id)).length;

    for (let i = 0; i < 3; i++) {
      await client.beta.messages.create({ model: 'haiku', max_tokens: 32, betas: ['files-api-2025-04-14'], messages: naming(onB.id) });
      await client.beta.messages.countTokens({ model: 'haiku', betas: ['files-api-2025-04-14'], messages: naming(onA.id) });
    }
    expect(sentTo(accounts.b, '/v1/messages', onB.id)).to.equal(3);
    expect(sentTo(accounts.a, '/v1/messages', onB.id)).to.equal(0);
    expect(sentTo(accounts.a, '/v1/messages/count_tokens', onA.id)).to.equal(3);
    expect(sentTo(accounts.b, '/v1/messages/count_tokens', onA.id)).to.equal(0);

    const batch = await client.messages.batches.create({ requests: [{ custom_id: 'doc', params: { model: 'haiku', max_tokens: 16, messages: naming(onB.id) } }] });
    expect(batch.id).to.match(/^msgbatch_b_/);

    const mixed = await client.beta.messages.create({ model: 'haiku', max_tokens: 32, betas: ['files-api-2025-04-14'], messages: naming(onA.id, onB.id) }).catch((err) => err);
    expect(mixed).to.be.instanceOf(Anthropic.BadRequestError);
    expect(mixed.error.error.message).to.include('one upstream account');
    const mixedBatch = await client.messages.batches.create({
      requests: [{ custom_id: 'x', params: { model: 'haiku', max_tokens: 16, messages: naming(onA.id) } }, { custom_id: 'y', params: { model: 'haiku', max_tokens: 16, messages: naming(onB.id) } }],
    }).catch((err) => err);
    expect(mixedBatch).to.be.instanceOf(Anthropic.BadRequestError);
  });
});
