/**
 * A stream held back for a slow client gives its upstream socket back whole (issue 40): the gateway
 * pauses the upstream reply (and its socket) while the client's socket is full (lib/http/sse.ts), and a
 * kept-alive upstream socket left paused when it returns to the target's agent hangs the next request
 * sent on it (the bench's chat-stream-tools row did, 30 s, after 09663e4). A stream stalled then read to
 * its end, and one stalled then abandoned, are followed by requests on the same keep-alive agent: every
 * one completes, and after the stream read to its end they go out on its very socket.
 */
import { expect } from 'chai';
import type net from 'node:net';
import { bulkNativeReply, decodeChunkedBody, openStalledClient, type BulkShape } from '../helpers/bulk-streams';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { chatHeaders, nativeHeaders, parseSseText, rawRequest } from '../helpers/http-client';

const MiB = 1024 * 1024;
const piece = 'x'.repeat(200);

/** Read `socket`'s reply to its last chunk, `bytesPerTick` every `tickMs` (a slow reader: its socket stays full). */
function readToEnd(socket: net.Socket, pace: { bytesPerTick: number; tickMs: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let sinceTick = 0;
    let tail = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      tail = Buffer.concat([tail, chunk]).subarray(-7);
      if (tail.toString('latin1') === '\r\n0\r\n\r\n') return resolve(Buffer.concat(chunks));
      sinceTick += chunk.length;
      if (sinceTick < pace.bytesPerTick) return;
      sinceTick = 0;
      socket.pause();
      setTimeout(() => socket.resume(), pace.tickMs);
    });
    socket.once('end', () => reject(new Error('the gateway closed the connection before the last chunk')));
    socket.once('error', reject);
    socket.resume();
  });
}

/** `promise`, or a rejection naming the wait when it has not settled within `ms`. */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no reply within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Until the upstream has written nothing more for `stillMs` (it waits on the gateway), 20 s at most. */
async function untilHeldBack(sent: { bytes: number }, stillMs = 300): Promise<void> {
  let last = -1;
  for (let still = 0, waited = 0; still < stillMs && waited < 20_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    still = sent.bytes === last ? still + 50 : 0;
    last = sent.bytes;
  }
}

/** A streaming route, and the last record of its stream (what says the stream ended whole). */
interface Route {
  name: string;
  path: string;
  headers: Array<[string, string]>;
  body: Record<string, unknown>;
  last(events: Array<{ event?: string; data: string }>): string | undefined;
  /** What `last` reads from a stream that ended whole. */
  end: string;
}

const messages = [{ role: 'user', content: 'Write a long story.' }];
const ROUTES: Route[] = [
  {
    name: 'native relay', path: '/v1/messages', headers: nativeHeaders(KEYS.all),
    body: { model: 'model-haiku-4.5', max_tokens: 1024, stream: true, messages }, last: (events) => events.at(-1)?.event, end: 'message_stop',
  },
  {
    name: 'chat translation', path: '/v1/chat/completions', headers: chatHeaders(KEYS.all),
    body: { model: 'model-haiku-4.5', stream: true, messages }, last: (events) => events.at(-1)?.data, end: '[DONE]',
  },
];

describe('upstream socket reuse after a held stream', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let sent = { bytes: 0 };
  const shape: BulkShape = { piece, times: Math.ceil((16 * MiB) / 300), usage: { input_tokens: 10, output_tokens: 1000 } };

  before(async () => {
    const handler: FakeHandler = (request) => {
      if (!request.body.stream) return { kind: 'json', body: nativeMessage('short', undefined, request.body.model) };
      sent = { bytes: 0 };
      const reply = bulkNativeReply(request.body.model, shape, sent);
      // The long stream's upstream ends its reply a little after message_stop, where the relay has ended the
      // client's (the short ones end at once, so the next request finds the socket back in the agent).
      return shape.times > 20 && reply.kind === 'stream' ? { ...reply, events: [...reply.events, { pauseMs: 100 }] } : reply;
    };
    gw = await startTestGateway({ handler });
  });
  after(async () => {
    await gw?.close();
  });

  /** A whole reply, then a short stream of `route`, twice, each within 5 s: nothing hangs on a paused socket. */
  async function followUps(route: Route): Promise<void> {
    const long = shape.times;
    try {
      for (let i = 0; i < 2; i++) {
        const whole = await within(5000, rawRequest(gw.url, { path: route.path, headers: route.headers, body: { ...route.body, stream: false } }));
        expect(whole.status, whole.text).to.equal(200);
        shape.times = 20;
        const stream = await within(5000, rawRequest(gw.url, { path: route.path, headers: route.headers, body: route.body }));
        expect(stream.status).to.equal(200);
        expect(route.last(parseSseText(stream.text))).to.equal(route.end);
        shape.times = long;
        // The relay ends the client's reply at message_stop; the upstream's own end follows at once.
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      shape.times = long;
    }
  }

  for (const route of ROUTES) {
    it(`${route.name}: a stream stalled, then read slowly to its end: its upstream socket carries the next requests, which complete`, async () => {
      const first = gw.upstream.requests.length;
      const client = await openStalledClient(gw.url, route.path, Object.fromEntries(route.headers), route.body);
      try {
        await untilHeldBack(sent);
        expect(sent.bytes / MiB, 'MiB the upstream could write for a stalled reader').to.be.below(12);
        const reply = await readToEnd(client, { bytesPerTick: 256 * 1024, tickMs: 10 });
        const events = parseSseText(decodeChunkedBody(reply).toString('utf8'));
        expect(events.filter((event) => event.data.includes(piece))).to.have.length(shape.times);
        expect(route.last(events)).to.equal(route.end);
      } finally {
        client.destroy();
      }
      // The upstream's own end (100 ms after message_stop) returns the socket to the agent.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await followUps(route);
      const ports = gw.upstream.requests.slice(first).map((request) => request.remotePort);
      expect(ports, 'the upstream ports of the stream and the requests after it').to.have.length(5);
      expect(new Set(ports).size, `one kept-alive socket: ${ports.join(', ')}`).to.equal(1);
    });

    it(`${route.name}: a stream stalled, then abandoned by its client: its upstream request is cancelled, and the next requests complete`, async () => {
      const first = gw.upstream.requests.length;
      const client = await openStalledClient(gw.url, route.path, Object.fromEntries(route.headers), route.body);
      await untilHeldBack(sent);
      client.destroy();
      await gw.upstream.socketClosed(first);
      await followUps(route);
      expect(gw.upstream.requests.length - first).to.equal(5);
    });
  }
});
