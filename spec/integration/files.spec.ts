/**
 * Files through the gateway, driven with the Anthropic SDK (`client.beta.files`): each file is pinned to
 * the key that uploaded it (another key gets 404 on every file route, and on a Messages request naming
 * it in a `file_id`), the upload size is bounded by `limits.fileBytes`.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { createFakeFiles, type FakeFiles } from '../helpers/fake-files';
import { defaultHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';

describe('Files (Anthropic SDK)', function () {
  this.timeout(20_000);
  let fake: FakeFiles;
  let gw: TestGateway;
  const sdk = (key: string) => new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0 });

  before(async () => {
    fake = createFakeFiles(defaultHandler);
    gw = await startTestGateway({ handler: fake.handler, overrides: { limits: { fileBytes: 4096 } } });
  });
  after(async () => gw.close());

  it('a file uploaded by one key is invisible to another, and usable in a file_id content block only by its own key', async () => {
    const owner = sdk(KEYS.all);
    const stranger = sdk(KEYS.haikuOnly);
    const uploaded = await owner.beta.files.upload({ file: await toFile(Buffer.from('the quarterly report'), 'report.txt', { type: 'text/plain' }) });
    expect(uploaded).to.include({ type: 'file', filename: 'report.txt', size_bytes: 20 });

    expect((await owner.beta.files.retrieveMetadata(uploaded.id)).id).to.equal(uploaded.id);
    expect(await stranger.beta.files.retrieveMetadata(uploaded.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
    expect(await stranger.beta.files.download(uploaded.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
    expect(await stranger.beta.files.delete(uploaded.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
    // The owner reaches the upstream, which refuses to download an uploaded file (as the real API).
    expect(await owner.beta.files.download(uploaded.id).catch((err) => err)).to.be.instanceOf(Anthropic.BadRequestError);
    const listed = [];
    for await (const file of stranger.beta.files.list()) listed.push(file.id);
    expect(listed).to.deep.equal([]);
    for await (const file of owner.beta.files.list()) listed.push(file.id);
    expect(listed).to.deep.equal([uploaded.id]);

    const ask = (client: Anthropic) => client.beta.messages.create({
      model: 'haiku', max_tokens: 32, betas: ['files-api-2025-04-14'],
      messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: uploaded.id } }, { type: 'text', text: 'Summarise.' }] }],
    });
    const before = gw.upstream.requests.length;
    const refused = await ask(sdk(KEYS.haikuOnly)).catch((err) => err);
    expect(refused).to.be.instanceOf(Anthropic.NotFoundError);
    expect(gw.upstream.requests.length).to.equal(before);
    const answered = await ask(owner);
    expect(answered.content[0].type).to.equal('text');
    expect(gw.upstream.requests.at(-1)!.body.messages[0].content[0].source.file_id).to.equal(uploaded.id);

    expect((await owner.beta.files.delete(uploaded.id)).id).to.equal(uploaded.id);
    expect(await owner.beta.files.retrieveMetadata(uploaded.id).catch((err) => err)).to.be.instanceOf(Anthropic.NotFoundError);
  });

  it('bounds the upload size by limits.fileBytes (413 before the upstream)', async () => {
    const before = gw.upstream.requests.length;
    const tooBig = await sdk(KEYS.all).beta.files.upload({ file: await toFile(Buffer.alloc(5000, 'a'), 'big.txt', { type: 'text/plain' }) }).catch((err) => err);
    expect(tooBig.status).to.equal(413);
    expect(gw.upstream.requests.length).to.equal(before);
  });
});
