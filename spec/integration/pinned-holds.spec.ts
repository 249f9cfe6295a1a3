/**
 * A Messages request naming a file goes to the upstream target holding it (middleware/file-access.ts,
 * `ctx.target`), whatever models that target lists, and is billed at that target's `priceMultiplier`
 * (lib/billing/settlement.ts). So its credit hold is that target's multiple of its worst case, at both
 * of the credit step's holds (the byte bound and the measured input: middleware/credit-reservation.ts);
 * the same message naming no file is held at the dearest target serving its model. A key near its cap
 * cannot pass it through a file kept on a dearer account.
 *
 * Three accounts, each a fake upstream with its own file ids: `cheap` (x1, every model), `mid` (x2,
 * haiku only: the dearest serving haiku) and `dear` (x3, sonnet only).
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { waitForAfterResponseSteps } from '../../lib/app';
import { parseConfig } from '../../lib/config';
import { createCatalogue } from '../../lib/config/catalogue';
import { estimateWorstCase, fitOutputTokens, priceWorstCase, scaleWorstCase } from '../../lib/billing/worst-case';
import { utcMonth } from '../../lib/store/month';
import { createFakeFiles } from '../helpers/fake-files';
import { defaultHandler, startFakeUpstream, type FakeHandler, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest, type RawReply } from '../helpers/http-client';

const SECRETS = { spent: 'sk-cs4-test-pinned-holds-spent-01', near: 'sk-cs4-test-pinned-holds-near-001' };
const FILES_BETA = 'files-api-2025-04-14';
/** A big text file: its bound is a token a byte (lib/billing/input-bound.ts), 100,000 tokens. */
const BIG_FILE_BYTES = 100_000;
const SMALL_FILE_BYTES = 1_000;
/** What the fake's count_tokens counts of a request naming a file (fewer tokens than bytes, as real text counts). */
const MEASURED_FILE_TOKENS = 60_000;
/** The near key's cap: the big file's message fits it at x2 measured (about 0.26), not at x3 (about 0.38). */
const NEAR_CAP = 0.3;

const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
const haiku = createCatalogue(config).resolve('haiku')!;

/** A haiku message naming `fileId` (a document block), or none. */
function messageOf(fileId: string | null, maxTokens = 16): Record<string, unknown> {
  const document = fileId === null ? [] : [{ type: 'document', source: { type: 'file', file_id: fileId } }];
  return { model: 'haiku', max_tokens: maxTokens, messages: [{ role: 'user', content: [...document, { type: 'text', text: 'Summarise.' }] }] };
}

/** Numbers as a 402 writes them: `151,024` tokens, `0.3` credits. */
const numberIn = (text: string, pattern: RegExp): number => Number(pattern.exec(text)![1].replace(/,/g, ''));

describe('a message naming a file is held at the priceMultiplier of the target holding it', function () {
  this.timeout(30_000);
  const started: Array<{ close(): Promise<void> }> = [];
  let gw: TestGateway;
  /** The file ids of each key (files are their uploader's), on each account: [small, big]. */
  const files: Record<string, Record<string, string[]>> = { spent: {}, near: {} };
  const accounts: Record<string, FakeUpstream> = {};

  before(async () => {
    // count_tokens counts a request naming a file at MEASURED_FILE_TOKENS, any other at 10.
    const answer: FakeHandler = (request) => (request.url.startsWith('/v1/messages/count_tokens')
      ? { kind: 'json', body: { input_tokens: JSON.stringify(request.body).includes('"file_id"') ? MEASURED_FILE_TOKENS : 10 } }
      : defaultHandler(request));
    for (const name of ['cheap', 'mid', 'dear']) {
      accounts[name] = await startFakeUpstream(createFakeFiles(answer, `file_${name}_`).handler);
      started.push(accounts[name]);
    }
    const target = (id: string, extra: Record<string, unknown> = {}) => ({ id, url: accounts[id].url, apiKeyEnv: 'TEST_UPSTREAM_API_KEY', ...extra });
    gw = await startTestGateway({
      overrides: {
        upstream: {
          targets: [target('cheap'), target('mid', { priceMultiplier: 2, models: ['model-haiku-4.5'] }), target('dear', { priceMultiplier: 3, models: ['model-sonnet-4.6'] })],
          timeoutMs: 5000,
        },
        keys: [
          // Spent: its credit left pays no request at all, so a refusal is never measured (its 402 shows the byte bound's hold).
          { id: 'spent', key: SECRETS.spent, rateLimitPerMinute: 100_000, monthlyCreditCap: 0.001 },
          { id: 'near', key: SECRETS.near, rateLimitPerMinute: 100_000, monthlyCreditCap: NEAR_CAP },
        ],
      },
    });
    started.unshift(gw);
    // Equal weights: each round of three uploads puts one file on each account.
    for (const key of ['spent', 'near'] as const) {
      const sdk = new Anthropic({ apiKey: SECRETS[key], baseURL: gw.url, maxRetries: 0 });
      for (const bytes of [SMALL_FILE_BYTES, BIG_FILE_BYTES]) {
        for (let i = 0; i < 3; i++) {
          const file = await sdk.beta.files.upload({ file: await toFile(Buffer.from('r'.repeat(bytes)), 'report.txt', { type: 'text/plain' }) });
          (files[key][file.id.split('_')[1]] ??= []).push(file.id);
        }
      }
      expect(Object.values(files[key]).map((ids) => ids.length)).to.deep.equal([2, 2, 2]);
    }
  });
  after(async () => {
    await Promise.all(started.splice(0).map((item) => item.close()));
  });

  const send = (secret: string, body: Record<string, unknown>) => rawRequest(gw.url, {
    method: 'POST', path: '/v1/messages', headers: [...nativeHeaders(secret), ['anthropic-beta', FILES_BETA]], body,
  });
  /** The hold a 402 says the request needed ("up to X credits with its output bound"), and its input bound in tokens. */
  function heldBy(reply: RawReply): { credits: number; inputTokens: number; message: string } {
    expect(reply.status, reply.text).to.equal(402);
    expect(reply.json.error.type).to.equal('billing_error');
    const message: string = reply.json.error.message;
    return { credits: numberIn(message, /up to ([\d.]+) with its output bound/), inputTokens: numberIn(message, /input bound ([\d,]+) tokens/), message };
  }
  const sentTo = (name: string) => accounts[name].requests.filter((r) => r.url === '/v1/messages').length;

  it('holds a file on the x3 target at 3x, on the x1 target at 1x; without a file at the dearest target serving haiku (x2)', async () => {
    const { dear, cheap, mid } = files.spent;
    for (const [fileId, multiplier] of [[dear[1], 3], [cheap[1], 1], [mid[1], 2], [null, 2]] as const) {
      const { credits, inputTokens, message } = heldBy(await send(SECRETS.spent, messageOf(fileId)));
      expect(credits, `${fileId ?? 'no file'}`).to.be.closeTo(priceWorstCase(haiku, inputTokens, 16) * multiplier, 1e-6);
      // The file is in its input bound, a token a byte.
      if (fileId !== null) expect(message).to.include(`100,000 from file(s) ${fileId}`);
    }
  });

  it('a key near its cap: the big file on the x3 target is refused 402 (not even its measured input fits at 3x), the same message without it is served', async () => {
    const month = utcMonth(Date.now());
    const before = { dear: sentTo('dear'), spend: await gw.gateway.store.getMonthSpend('near', month) };
    // Its byte bound (about 101,300 tokens) does not fit at x2 or x3; measured (about 64,000 tokens) it
    // would fit at x2 (0.26 credits), not at x3 (0.38): refused, nothing sent, nothing spent.
    const refused = await send(SECRETS.near, messageOf(files.near.dear[1]));
    expect(refused.status, refused.text).to.equal(402);
    expect(refused.json.error.message).to.match(/^monthly credit cap of this key: /);
    expect(sentTo('dear')).to.equal(before.dear);
    await waitForAfterResponseSteps(gw.gateway.gateway.router);
    expect(await gw.gateway.store.getMonthSpend('near', month)).to.equal(before.spend);

    // The same message naming no file: served by a haiku target, held at x2 (a little), billed at its own.
    const plain = await send(SECRETS.near, messageOf(null));
    expect(plain.status, plain.text).to.equal(200);
    expect(plain.headers['x-gateway-max-tokens']).to.equal(undefined);
    // The big file on the x2 target: its measured input fits at x2.
    const onMid = await send(SECRETS.near, messageOf(files.near.mid[1]));
    expect(onMid.status, onMid.text).to.equal(200);
  });

  it('a key near its cap: a file on the x3 target with a large max_tokens has it cut to what the credit left pays at 3x, and is billed at 3x', async () => {
    const month = utcMonth(Date.now());
    await waitForAfterResponseSteps(gw.gateway.gateway.router);
    const spent = await gw.gateway.store.getMonthSpend('near', month);
    const body = messageOf(files.near.dear[0], 30_000);
    const reply = await send(SECRETS.near, body);
    expect(reply.status, reply.text).to.equal(200);
    // Its input bound: the body's bytes and overhead, and the small file a token a byte.
    const inputTokens = Buffer.byteLength(JSON.stringify(body)) + config.reservation.overheadInputTokens + SMALL_FILE_BYTES;
    const worst = scaleWorstCase(estimateWorstCase(haiku, body, inputTokens, 30_000, config.reservation), 3);
    expect(Number(reply.headers['x-gateway-max-tokens'])).to.equal(fitOutputTokens(worst, NEAR_CAP - spent));
    expect(sentTo('dear')).to.be.greaterThan(0);
    // Billed at the dear target's x3: the fake's usage (10 input, 5 output tokens at 1 and 5 per million).
    await waitForAfterResponseSteps(gw.gateway.gateway.router);
    expect(await gw.gateway.store.getMonthSpend('near', month) - spent).to.be.closeTo((10 * 1 + 5 * 5) / 1e6 * 3, 1e-9);
  });
});
