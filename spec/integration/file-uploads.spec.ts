/**
 * File uploads as an attacker sends them (audit issue 40, low findings): an upload trickled in is cut
 * off by the slow-client guard (408, connection closed) as a JSON body is; an upload over
 * `limits.fileBytes` without a `content-length` (chunked) gets its 413 in the native error shape, not a
 * connection reset, and a small overshoot keeps the connection for the next request. The SDK's upload
 * (with a `content-length`) far over the limit gets its 413 too.
 */
import http from 'node:http';
import net from 'node:net';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { createFakeFiles, type FakeFiles } from '../helpers/fake-files';
import { defaultHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';

const BOUNDARY = 'upload-boundary';
const PART_HEAD = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="big.txt"\r\ncontent-type: text/plain\r\n\r\n`;
const UPLOAD_HEADERS = {
  'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'files-api-2025-04-14',
  'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
};

/** The reply to a chunked upload of `total` bytes of file content (sent 16 KiB at a time, no content-length). */
function uploadChunked(url: string, total: number, agent: http.Agent): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/files`, { method: 'POST', headers: UPLOAD_HEADERS, agent });
    // An error after the reply (the connection closed while the rest was still being sent) changes nothing.
    req.on('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), reused: req.reusedSocket }));
    });
    req.write(PART_HEAD);
    const chunk = Buffer.alloc(16 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end(`\r\n--${BOUNDARY}--\r\n`);
    };
    pump();
  });
}

describe('file uploads: slow clients and oversize uploads', function () {
  this.timeout(20_000);
  let fake: FakeFiles;
  let gw: TestGateway;

  before(async () => {
    fake = createFakeFiles(defaultHandler);
    gw = await startTestGateway({ handler: fake.handler, overrides: { limits: { fileBytes: 64 * 1024, bodyTimeoutMs: 300, bodyMinBytesPerSecond: 1024 } } });
  });
  after(async () => gw.close());

  it('an upload trickled in slower than limits.bodyMinBytesPerSecond gets 408 and its connection closed, before the upstream', async () => {
    const port = Number(new URL(gw.url).port);
    const socket = net.connect(port, '127.0.0.1');
    const head = Object.entries({ host: `127.0.0.1:${port}`, ...UPLOAD_HEADERS, 'transfer-encoding': 'chunked' }).map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`POST /v1/files HTTP/1.1\r\n${head}\r\n`);
    socket.write(`${PART_HEAD.length.toString(16)}\r\n${PART_HEAD}\r\n`);
    const started = Date.now();
    // Ten bytes every 100 ms (100 bytes per second), for at most 5 s.
    const trickle = setInterval(() => {
      if (!socket.destroyed && socket.writable) socket.write('a\r\n0123456789\r\n');
    }, 100);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    const closed = await new Promise<boolean>((resolve) => {
      const deadline = setTimeout(() => resolve(false), 5000);
      socket.once('close', () => {
        clearTimeout(deadline);
        resolve(true);
      });
    });
    clearInterval(trickle);
    socket.destroy();
    expect(closed, 'the gateway closed the connection').to.equal(true);
    expect(Date.now() - started).to.be.below(3000);
    expect(received).to.match(/^HTTP\/1\.1 408 /);
    const body = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
    expect(body.type).to.equal('error');
    expect(body.error.message).to.match(/slower than 1024 bytes per second/);
    expect(fake.count()).to.equal(0);
    expect(gw.upstream.requests.filter((request) => request.url.startsWith('/v1/files'))).to.have.length(0);
  });

  it('a chunked upload over limits.fileBytes gets its 413 in the native shape; a small overshoot keeps the connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // 1.5 times the limit: read to its end and dropped, then the same connection serves the next request.
      const first = await uploadChunked(gw.url, 96 * 1024, agent);
      expect(first.status).to.equal(413);
      expect(first.body).to.deep.include({ type: 'error' });
      expect(first.body.error).to.include({ type: 'request_too_large' });
      expect(first.body.error.message).to.include('limits.fileBytes');
      const second = await uploadChunked(gw.url, 1024, agent);
      expect(second.status).to.equal(200);
      expect(second.reused, 'the connection of the refused upload was kept').to.equal(true);
      expect(second.body.size_bytes).to.equal(16 * 1024);
      // Far over the limit (16 MiB): the 413 arrives, saying the connection closes, while the client sends.
      for (let i = 0; i < 3; i++) {
        const third = await uploadChunked(gw.url, 16 * 1024 * 1024, agent).catch((err) => err);
        expect(third.status, String(third)).to.equal(413);
        expect(third.body.error.type).to.equal('request_too_large');
        expect(third.headers.connection).to.equal('close');
      }
    } finally {
      agent.destroy();
    }
    expect(fake.count()).to.equal(1);
  });

  it('the SDK\'s upload far over limits.fileBytes gets the 413 (APIError), not a connection error', async () => {
    const client = new Anthropic({ baseURL: gw.url, apiKey: KEYS.all, maxRetries: 0 });
    const refused = await client.beta.files.upload({ file: await toFile(Buffer.alloc(8 * 1024 * 1024, 'a'), 'big.txt', { type: 'text/plain' }) }).catch((err) => err);
    expect(refused).to.be.instanceOf(Anthropic.APIError);
    expect(refused.status).to.equal(413);
    expect(refused.error.error.type).to.equal('request_too_large');
  });
});
