/**
 * Backpressure end to end (issue 40, medium 6): on every streaming route the gateway reads the
 * upstream no faster than the client takes the reply. Eight clients that send a request for an 80 MB
 * stream and then stop reading grow the gateway process's resident memory by less than 20 MB (on
 * Responses too, whose final events must repeat the text sent: see textTheQueuesHold), and the upstream
 * is held back (it cannot write its whole stream); a client that reads slowly still gets every byte, and
 * the reply is billed at the usage the upstream reported.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import type net from 'node:net';
import { ADMIN_TOKEN, admin } from '../helpers/admin';
import { bulkChatReply, bulkNativeReply, decodeChunkedBody, openStalledClient, readSlowly, residentBytes, type BulkShape } from '../helpers/bulk-streams';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { testConfigObject, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { startGatewayProcess, writeTempConfig, type GatewayProcess } from '../helpers/gateway-process';
import { parseSseText } from '../helpers/http-client';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');

const MiB = 1024 * 1024;
const SECRETS = {
  native: 'sk-cs4-test-backpressure-native-01',
  chat: 'sk-cs4-test-backpressure-chat-0001',
  responses: 'sk-cs4-test-backpressure-resp-0001',
  passThrough: 'sk-fam-test-backpressure-pass-0001',
  nativeViaChat: 'sk-fam-test-backpressure-rev-00001',
};

const nativeHeaders = (key: string) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** One streaming route: its request, and the text of the reply's deltas read back from its SSE body. */
interface StreamRoute {
  name: string;
  keyId: keyof typeof SECRETS;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  /** Credits per million input and output tokens of the model the route names (config.json / below). */
  prices: [number, number];
  /**
   * The route keeps the text it has sent (Responses: its `.done` events and `response.completed` carry
   * it whole, wire-formats.md), so a stalled reader's memory is also the text of what the kernel's send
   * queue took before the socket refused a write (see textTheQueuesHold).
   */
  keepsText?: boolean;
  text(events: Array<{ event?: string; data: string }>): string;
}

const nativeText = (events: Array<{ event?: string; data: string }>) => events
  .filter((e) => e.event === 'content_block_delta').map((e) => JSON.parse(e.data).delta.text).join('');
const chatText = (events: Array<{ event?: string; data: string }>) => events
  .filter((e) => e.data !== '[DONE]').map((e) => JSON.parse(e.data).choices?.[0]?.delta?.content ?? '').join('');
const messages = [{ role: 'user', content: 'Write a long story.' }];

const ROUTES: StreamRoute[] = [
  { name: 'native relay', keyId: 'native', path: '/v1/messages', headers: nativeHeaders(SECRETS.native), body: { model: 'haiku', max_tokens: 1024, stream: true, messages }, prices: [1, 5], text: nativeText },
  { name: 'chat translation', keyId: 'chat', path: '/v1/chat/completions', headers: bearer(SECRETS.chat), body: { model: 'haiku', stream: true, messages }, prices: [1, 5], text: chatText },
  {
    name: 'Responses', keyId: 'responses', path: '/v1/responses', headers: bearer(SECRETS.responses), body: { model: 'haiku', stream: true, store: false, input: 'Write a long story.' }, prices: [1, 5], keepsText: true,
    text: (events) => events.filter((e) => e.event === 'response.output_text.delta').map((e) => JSON.parse(e.data).delta).join(''),
  },
  { name: 'chat pass-through', keyId: 'passThrough', path: '/v1/chat/completions', headers: bearer(SECRETS.passThrough), body: { model: 'fam-5', stream: true, messages }, prices: [2, 8], text: chatText },
  { name: 'native via a chat upstream', keyId: 'nativeViaChat', path: '/v1/messages', headers: nativeHeaders(SECRETS.nativeViaChat), body: { model: 'fam-5', max_tokens: 1024, stream: true, messages }, prices: [2, 8], text: nativeText },
];

/**
 * The text eight stalled streams of a route that keeps its text hold, in MiB, before any is deflated:
 * each stream's kernel send queue takes up to tcp_wmem's maximum of output bytes (Linux,
 * `net.ipv4.tcp_wmem`; 4 MiB by default, `ss -tn` shows some 3.9 MB queued per stalled client) before
 * `res.write` refuses, and `textShare` of those bytes is text, one byte a character. The gateway cannot
 * bound that queue (Node sets no SO_SNDBUF or TCP_NOTSENT_LOWAT on a TCP socket) nor drop the text (the
 * final events repeat it whole): some 16 MiB here, 19 to 21 MB growth in all when it was kept as it is.
 * translators/held-text.ts keeps a stream's first 256 KiB as they are and deflates the rest.
 */
function textTheQueuesHold(textShare: number, wmem = fs.existsSync('/proc/sys/net/ipv4/tcp_wmem') ? Number(fs.readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/)[2]) : 4 * MiB): number {
  return (8 * wmem * textShare) / MiB;
}

/** The gateway's config: the shipped catalogue, a chat-completions key group (reverse translation on) on the same fake upstream, one key per route. */
function backpressureConfig(upstreamUrl: string): Record<string, unknown> {
  return testConfigObject(upstreamUrl, {
    models: [...shipped.models, { id: 'fam-5', upstreamModel: 'fam-large-2026', pricing: { inputPerMillion: 2, outputPerMillion: 8 } }],
    keyGroups: [{ id: 'family', keyPrefix: 'sk-fam-', models: ['fam-5'], upstream: { kind: 'chat-completions', url: upstreamUrl, apiKeyEnv: 'TEST_FAMILY_API_KEY' }, reverseTranslation: true }],
    keys: Object.entries(SECRETS).map(([id, key]) => ({ id, key, rateLimitPerMinute: 100000 })),
  });
}

describe('backpressure: streams wait for their reader', function () {
  this.timeout(120_000);
  let upstream: FakeUpstream;
  let gateway: GatewayProcess;
  /** What the next stream request gets: its size, and the counter of the bytes the upstream wrote. */
  let shape: BulkShape;
  const sent: Array<{ bytes: number }> = [];

  before(async () => {
    upstream = await startFakeUpstream((request) => {
      const counter = { bytes: 0 };
      sent.push(counter);
      return request.url.startsWith('/v1/chat/completions') ? bulkChatReply(request.body.model, shape, counter) : bulkNativeReply(request.body.model, shape, counter);
    });
    // V8's young generation held at its smallest (1 MB semi-spaces): by default it grows with the
    // throughput itself, some 22 MB over an idle process's for the first 50 MB that pass before the
    // sockets fill, which says nothing about what a stream holds (it is there after any burst of traffic).
    gateway = await startGatewayProcess({
      GATEWAY_CONFIG: writeTempConfig(backpressureConfig(upstream.url)), TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET, TEST_FAMILY_API_KEY: 'family-upstream-secret',
      ADMIN_TOKEN,
    }, ['--max-semi-space-size=1']);
  });
  after(async () => {
    await gateway?.stop();
    await upstream?.close();
  });

  for (const route of ROUTES) {
    it(`${route.name}: eight stalled readers of 80 MB streams of varied text hold the upstream back, the gateway growing by less than 20 MB`, async () => {
      const piece = 'x'.repeat(200);
      // A few small streams first, read whole: the route's code is compiled and resident before the baseline.
      shape = { piece, times: 50, usage: { input_tokens: 10, output_tokens: 2500 } };
      let reply: Buffer | undefined;
      for (let i = 0; i < 3; i++) reply = await readSlowly(gateway.url, route.path, route.headers, route.body, { bytesPerTick: Infinity, tickMs: 0 });
      // The records that carry one piece each are the deltas, most of what the queues hold.
      const deltas = decodeChunkedBody(reply!).toString('latin1').split('\n\n').filter((record) => record.split(piece).length === 2);
      const textShare = (deltas.length * piece.length) / deltas.reduce((sum, record) => sum + record.length + 2, 0);
      const sentText = route.keepsText ? textTheQueuesHold(textShare) : 0;
      const sentTextAt4MiB = route.keepsText ? textTheQueuesHold(textShare, 4 * MiB) : 0;
      const pid = gateway.child.pid!;
      const baseline = residentBytes(pid);
      // Random letters: what the gateway keeps of the text compresses no better than prose would.
      shape = { piece, times: Math.ceil((80 * MiB) / 300), usage: { input_tokens: 10, output_tokens: 20 * MiB }, varied: true };
      const first = upstream.requests.length;
      const counters = sent.length;
      const clients: net.Socket[] = [];
      for (let i = 0; i < 8; i++) clients.push(await openStalledClient(gateway.url, route.path, route.headers, route.body));
      try {
        // Until the upstream has written nothing more for a second (it waits on the gateway), or memory shows the gateway does not wait.
        let peak = baseline;
        let last = -1;
        let stillFor = 0;
        for (let waited = 0; waited < 30_000 && stillFor < 1000 && peak - baseline < 200 * MiB; waited += 100) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          peak = Math.max(peak, residentBytes(pid));
          const total = sent.slice(counters).reduce((sum, counter) => sum + counter.bytes, 0);
          stillFor = total === last && sent.length - counters === 8 ? stillFor + 100 : 0;
          last = total;
        }
        const written = sent.slice(counters).map((counter) => counter.bytes);
        expect(written, 'every stream reached the upstream').to.have.length(8);
        // 20 MB with Linux's default tcp_wmem maximum (4 MiB); a host whose queues take more keeps that much more text.
        const beyondDefault = Math.max(0, sentText - sentTextAt4MiB);
        expect((peak - baseline) / MiB, `gateway RSS growth in MiB (baseline ${(baseline / MiB).toFixed(1)}, text the send queues took ${sentText.toFixed(1)})`).to.be.below(20 + beyondDefault);
        for (const bytes of written) expect(bytes / MiB, 'MiB the upstream could write for a stalled reader').to.be.below(40);
      } finally {
        for (const client of clients) client.destroy();
      }
      // The gateway lets go of the upstream once its client has gone.
      await Promise.all(clients.map((_, i) => upstream.socketClosed(first + i)));
    });
  }

  for (const route of ROUTES) {
    it(`${route.name}: a slow reader receives every byte of a 4 MB stream, billed at the upstream's usage`, async () => {
      const piece = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(8);
      // Usage within the model's bounds (a larger figure is billed at the hold: usage sanity, issue 40).
      shape = { piece, times: Math.ceil((4 * MiB) / piece.length), usage: { input_tokens: 10, output_tokens: 1000 } };
      const usageOf = async () => ((await admin({ url: gateway.url } as TestGateway, 'GET', `/keys/${route.keyId}/usage`)).body.models as Array<{ credits: number }>)
        .reduce((sum, model) => sum + model.credits, 0);
      const before = await usageOf();
      const reply = await readSlowly(gateway.url, route.path, route.headers, route.body, { bytesPerTick: 256 * 1024, tickMs: 20 });
      expect(reply.subarray(0, 15).toString()).to.equal('HTTP/1.1 200 OK');
      const events = parseSseText(decodeChunkedBody(reply).toString('utf8'));
      const text = route.text(events);
      expect(text.length).to.equal(piece.length * shape.times);
      expect(text === piece.repeat(shape.times), 'the deltas, in order').to.equal(true);
      const expected = (shape.usage.input_tokens * route.prices[0] + shape.usage.output_tokens * route.prices[1]) / 1e6;
      let billed = 0;
      // Settlement follows the reply's end; bounded wait.
      for (let i = 0; i < 40 && Math.abs(billed - expected) > 1e-9; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        billed = (await usageOf()) - before;
      }
      expect(billed).to.be.closeTo(expected, 1e-9);
    });
  }
});
