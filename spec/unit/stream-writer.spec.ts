/** The streamed reply's writer (lib/http/sse.ts): every event reaches the client once, nothing after the end. */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Response } from 'express';
import { createStreamWriter } from '../../lib/http/sse';
import { createTargetAgent } from '../../lib/upstream/target';
import { makeTestCertificates } from '../helpers/redis-tls';

/** A response that records its writes and its end, as far as the writer uses one. */
function recordingResponse() {
  const calls: string[] = [];
  const res = {
    writableEnded: false,
    destroyed: false,
    write(text: string) {
      calls.push(`write ${text}`);
      return true;
    },
    end(text: string) {
      calls.push(`end ${text}`);
      res.writableEnded = true;
      return res;
    },
  };
  return { res, calls };
}

/** A key and a certificate for 127.0.0.1 signed by a throwaway CA (the CA's certificate as `ca`), made once. */
let certificate: Promise<{ key: Buffer; cert: Buffer; ca: Buffer }> | undefined;
function testCertificate(): Promise<{ key: Buffer; cert: Buffer; ca: Buffer }> {
  certificate ??= (async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stream-writer-tls-'));
    try {
      const { caFile, certFile, keyFile } = await makeTestCertificates(dir);
      return { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile), ca: fs.readFileSync(caFile) };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  })();
  return certificate;
}

/** `promise`, or a rejection naming `what` when it has not settled within `ms`. */
function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('stream writer', () => {
  it('ends with what is gathered, and writes nothing after the end', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    out.add('data: a\n\n');
    out.flush();
    out.add('data: last\n\n');
    out.end();
    out.add('data: late\n\n');
    out.flush();
    out.end();
    expect(calls.map((call) => call.replace(/^(write|end) /, '')).join('')).to.equal('data: a\n\ndata: last\n\n');
    expect(calls.filter((call) => call.startsWith('end'))).to.have.length(1);
  });

  it('drops what is gathered for a response that was destroyed (the client left)', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    out.add('data: a\n\n');
    res.destroyed = true;
    out.flush();
    out.end();
    expect(calls).to.deep.equal([]);
  });

  it('writes relayed bytes as they are, joined with the records of the same chunk in one write', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    const euro = Buffer.from('€');
    out.add(euro.subarray(0, 1));
    out.add(euro.subarray(1));
    out.add('event: error\n\n');
    out.flush();
    expect(calls).to.deep.equal(['write €event: error\n\n']);
  });

  /** A response whose socket is full (every write answers false), and a source that records pause and resume. */
  function fullResponse() {
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      destroyed: false,
      write: () => false,
      end() {},
      destroy() {
        res.destroyed = true;
        res.emit('close');
      },
    });
    const calls: string[] = [];
    const source = { pause: () => calls.push('pause'), resume: () => calls.push('resume') };
    return { res, source, calls };
  }

  it('pauses its source while the client socket is full and resumes it on drain', () => {
    const { res, source, calls } = fullResponse();
    const out = createStreamWriter(res as unknown as Response, source, 1000);
    out.add('data: a\n\n');
    out.flush();
    out.add('data: b\n\n');
    out.flush();
    expect(calls).to.deep.equal(['pause']);
    res.emit('drain');
    expect(calls).to.deep.equal(['pause', 'resume']);
    expect(res.listenerCount('drain') + res.listenerCount('close')).to.equal(0);
  });

  it('disconnects a client that does not drain within stallMs, then lets go of its source', async () => {
    const { res, source, calls } = fullResponse();
    const out = createStreamWriter(res as unknown as Response, source, 20);
    out.add('data: a\n\n');
    out.flush();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(res.destroyed).to.equal(true);
    // Resumed on close whatever closed the reply: the exchange cancels the upstream request of a client
    // that left, and a reply that ended while held must let its upstream reply end (its socket goes back to the agent).
    expect(calls).to.deep.equal(['pause', 'resume']);
    expect(res.listenerCount('drain') + res.listenerCount('close')).to.equal(0);
  });

  it("pauses its source's socket with it while the message is incomplete, and resumes both on close", () => {
    for (const complete of [false, true]) {
      const { res, source, calls } = fullResponse();
      const socket = { destroyed: false, pause: () => calls.push('socket pause'), resume: () => calls.push('socket resume') };
      const out = createStreamWriter(res as unknown as Response, { ...source, complete, socket }, 1000);
      out.add('data: a\n\n');
      out.flush();
      out.end();
      res.emit('close');
      // A complete message's socket is left alone: Node resumed it for the next message, maybe another request's.
      expect(calls, `complete: ${complete}`).to.deep.equal(complete ? ['pause', 'resume'] : ['pause', 'socket pause', 'socket resume', 'resume']);
    }
  });

  it('lets an upstream reply that ended while held be read to its end: its kept-alive socket carries the next request', async function () {
    this.timeout(15_000);
    const upstream = http.createServer((req, reply) => {
      reply.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.end(req.url === '/long' ? Buffer.alloc(1024 * 1024, 'x') : 'ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    // One socket: a request sent on a socket left paused would never get its reply.
    const agent = createTargetAgent(new URL('http://127.0.0.1/'), 1);
    const get = (path: string) => within(5000, new Promise<http.IncomingMessage>((resolve) => {
      http.get({ host: '127.0.0.1', port: (upstream.address() as net.AddressInfo).port, path, agent }, resolve);
    }), `the reply to ${path}`);
    try {
      const response = await get('/long');
      const port = response.socket.localPort;
      const { res } = fullResponse();
      const out = createStreamWriter(res as unknown as Response, response);
      await new Promise<void>((resolve) => response.once('data', (data: Buffer) => {
        // The client's socket refuses the write (the reply and its socket are held), and the client's reply ends
        // (as the native relay's does at message_stop, before the upstream's): Node then closes it.
        out.add(data);
        out.flush();
        out.end();
        Object.assign(res, { writableEnded: true, destroyed: true }).emit('close');
        resolve();
      }));
      expect(response.complete, 'the upstream reply was still arriving when it was held').to.equal(false);
      let rest = 0;
      response.on('data', (data: Buffer) => (rest += data.length));
      await within(5000, new Promise((resolve) => response.once('end', resolve)), 'the end of the held reply');
      const next = await get('/small');
      expect(next.socket.localPort, 'the same kept-alive socket').to.equal(port);
      next.resume();
      await new Promise((resolve) => next.once('end', resolve));
      expect(rest).to.be.above(0);
    } finally {
      agent.destroy();
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });

  // The held-streams target (64 KiB a stream) for a stalled reader too: the refused write and the rest
  // of one 32 KiB read (lib/upstream/target.ts reads a plain upstream socket only on demand). 33 to 49 KiB
  // measured with the chunk sizes below; 92 to 158 KiB when a paused socket still took a further 64 KiB read.
  // An https target keeps Node's reading of 16 KiB TLS records: 48 KiB measured.
  const cases = [{ scheme: 'http', chunkKiB: 1 }, { scheme: 'http', chunkKiB: 16 }, { scheme: 'http', chunkKiB: 64 }, { scheme: 'https', chunkKiB: 16 }];
  for (const { scheme, chunkKiB } of cases) it(`holds at most 64 KiB for a stalled reader of a fast ${scheme} upstream stream of ${chunkKiB} KiB chunks: the refused write, the rest of one read`, async function () {
    this.timeout(15_000);
    const chunk = Buffer.alloc(chunkKiB * 1024, 'x');
    let upstreamWrote = 0;
    const tls = scheme === 'https' ? await testCertificate() : undefined;
    // An upstream that writes its chunks as fast as it is read (waiting for drain), 64 MB at most.
    const upstream = (tls ? https.createServer(tls) : http.createServer()).on('request', (_req: http.IncomingMessage, reply: http.ServerResponse) => {
      reply.writeHead(200, { 'content-type': 'text/event-stream' });
      const more = () => {
        while (upstreamWrote < 64 * 1024 * 1024 && !reply.destroyed) {
          upstreamWrote += chunk.length;
          if (!reply.write(chunk)) return void reply.once('drain', more);
        }
        reply.end();
      };
      more();
    });
    // The gateway's side: a target's agent (lib/upstream/target.ts), the reply relayed through the writer as routes/reply.ts does.
    const agent = createTargetAgent(new URL(`${scheme}://127.0.0.1/`));
    let held: (() => Record<string, number>) | undefined;
    const gateway = http.createServer((_req, res) => {
      (tls ? https : http).get({ host: '127.0.0.1', port: (upstream.address() as net.AddressInfo).port, agent, ca: tls?.ca }, (response) => {
        const out = createStreamWriter(res as unknown as Response, response);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        response.on('data', (data: Buffer) => {
          out.add(data);
          out.flush();
        });
        // What this process holds of the stream: the response's write buffer (its `writableLength`
        // counts its socket's), the upstream reply's and its socket's read buffers.
        held = () => ({ write: res.writableLength, reply: response.readableLength, socket: response.socket?.readableLength ?? 0 });
      });
    });
    await Promise.all([upstream, gateway].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const client = new net.Socket();
    try {
      await new Promise<void>((resolve) => client.connect((gateway.address() as net.AddressInfo).port, '127.0.0.1', resolve));
      // A reader that never reads: once the kernel's queues are full (not the process's memory), nothing more is taken.
      client.pause();
      client.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
      // Until the upstream has written nothing more for half a second (a loaded machine may delay one
      // check past the I/O it waits for), 10 s at most.
      let last = -1;
      for (let still = 0, waited = 0; (still < 500 || !held) && waited < 10_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        still = upstreamWrote === last ? still + 100 : 0;
        last = upstreamWrote;
      }
      expect(upstreamWrote, 'the upstream is held back').to.be.below(64 * 1024 * 1024);
      const parts = held!();
      const kib = (parts.write + parts.reply + parts.socket) / 1024;
      // The refused write (under Node's 16 KiB high-water mark plus the write that crossed it, at most
      // one 32 KiB read) and what is left of that read (parsed into the reply at once); a paused socket
      // reads nothing more. Each part within its own bound, then the total.
      const what = `KiB held by the gateway for the stalled stream (${JSON.stringify(parts)})`;
      expect(parts.write, what).to.be.at.most(16 * 1024 + 32 * 1024);
      if (!tls) expect(parts.reply + parts.socket, what).to.be.at.most(32 * 1024);
      expect(kib, what).to.be.at.most(64);
    } finally {
      client.destroy();
      agent.destroy();
      upstream.closeAllConnections();
      gateway.closeAllConnections();
      await Promise.all([upstream, gateway].map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });
});
