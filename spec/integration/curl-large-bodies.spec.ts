/**
 * curl itself against every POST route: bodies of 2 and 20 MiB with `Expect: 100-continue` (curl adds
 * it to any body over 1 MiB), streamed and not. The gateway answers the 100 itself; the client gets
 * its reply and the upstream receives the body intact, without the header or the client's key.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KEYS, startTestGateway, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { tempDir } from '../helpers/temp-dir';

const MIB = 1024 * 1024;

interface Route {
  path: string;
  headers: string[];
  streams: boolean;
  /** The request body carrying `text`. */
  body(text: string, stream: boolean): Record<string, unknown>;
  /** The text as the upstream received it. */
  received(upstreamBody: any): string;
}

const nativeHeaders = ['x-api-key: ' + KEYS.all, 'anthropic-version: 2023-06-01'];
const nativeText = (body: any) => body.messages[0].content;
const ROUTES: Route[] = [
  {
    path: '/v1/messages', headers: nativeHeaders, streams: true, received: nativeText,
    body: (text, stream) => ({ model: 'model-haiku-4.5', max_tokens: 16, stream, messages: [{ role: 'user', content: text }] }),
  },
  {
    path: '/v1/messages/count_tokens', headers: nativeHeaders, streams: false, received: nativeText,
    body: (text) => ({ model: 'model-haiku-4.5', messages: [{ role: 'user', content: text }] }),
  },
  {
    path: '/v1/chat/completions', headers: [`authorization: Bearer ${KEYS.all}`], streams: true,
    received: (body) => body.messages[0].content.map((block: any) => block.text ?? '').join('') || body.messages[0].content,
    body: (text, stream) => ({ model: 'model-haiku-4.5', max_tokens: 16, stream, messages: [{ role: 'user', content: text }] }),
  },
  {
    path: '/v1/responses', headers: [`authorization: Bearer ${KEYS.all}`], streams: true,
    received: (body) => {
      const content = body.messages[0].content;
      return typeof content === 'string' ? content : content.map((block: any) => block.text ?? '').join('');
    },
    body: (text, stream) => ({ model: 'model-haiku-4.5', max_output_tokens: 16, stream, store: false, input: text }),
  },
];

/** Run curl with a body file; resolves with its status code, reply text and the bytes it uploaded. */
function curl(url: string, headers: string[], file: string): Promise<{ status: number; text: string; uploaded: number }> {
  const args = ['-sS', '-X', 'POST', url, '-H', 'content-type: application/json', '-H', 'Expect: 100-continue', '--data-binary', `@${file}`, '-w', '\n%{size_upload} %{http_code}'];
  for (const header of headers) args.push('-H', header);
  return new Promise((resolve, reject) => {
    execFile('curl', args, { maxBuffer: 64 * MIB }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`curl failed: ${stderr || err.message}`));
      const cut = stdout.lastIndexOf('\n');
      const [uploaded, status] = stdout.slice(cut + 1).split(' ').map(Number);
      resolve({ status, text: stdout.slice(0, cut), uploaded });
    });
  });
}

describe('curl: large bodies with Expect: 100-continue on every POST route', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let dir: string;
  before(async () => {
    gw = await startTestGateway();
    dir = tempDir('curl-bodies-');
  });
  after(async () => {
    await gw.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a caller without a key gets its 401 before uploading the body (no 100 Continue)', async () => {
    const file = path.join(dir, 'keyless.json');
    fs.writeFileSync(file, JSON.stringify(ROUTES[0].body('x'.repeat(20 * MIB), false)));
    const reply = await curl(gw.url + '/v1/messages', ['anthropic-version: 2023-06-01'], file);
    expect(reply.status).to.equal(401);
    expect(reply.uploaded).to.equal(0);
  });

  for (const route of ROUTES) {
    for (const size of [2 * MIB, 20 * MIB]) {
      for (const stream of route.streams ? [false, true] : [false]) {
        it(`${route.path}: ${size / MIB} MiB${stream ? ', streamed' : ''}`, async () => {
          gw.upstream.requests.length = 0;
          const text = 'x'.repeat(size - 200);
          const file = path.join(dir, 'body.json');
          fs.writeFileSync(file, JSON.stringify(route.body(text, stream)));
          const reply = await curl(gw.url + route.path, route.headers, file);
          expect(reply.status, reply.text.slice(0, 300)).to.equal(200);
          expect(gw.upstream.requests).to.have.length(1);
          const [seen] = gw.upstream.requests;
          expect(seen.headers.expect).to.equal(undefined);
          expect(seen.headers['x-api-key'] ?? seen.headers.authorization).to.include(UPSTREAM_SECRET);
          expect(JSON.stringify(seen.headers)).to.not.include(KEYS.all);
          expect(seen.raw.length).to.equal(Number(seen.headers['content-length']));
          expect(route.received(seen.body)).to.equal(text);
        });
      }
    }
  }
});
