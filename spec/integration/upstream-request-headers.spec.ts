/**
 * What reaches the upstream of the client's request: an allow list (lib/upstream/request-headers.ts).
 * Every header a client can send is sent, in every framing (content-length, chunked, gzip,
 * `Expect: 100-continue`), on both stores; the upstream sees the API's own headers, the gateway's
 * credential, and nothing of the client's credentials, hop-by-hop or framing headers.
 */
import { expect } from 'chai';
import http from 'node:http';
import zlib from 'node:zlib';
import { KEYS, startTestGateway, UPSTREAM_SECRET, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

/** Headers the upstream may see: the allow list, plus what the gateway's own client sets. */
const ALLOWED = new Set([
  'anthropic-version', 'anthropic-beta', 'anthropic-dangerous-direct-browser-access', 'x-stainless-lang', 'x-stainless-retry-count',
  'user-agent', 'accept', 'host', 'content-type', 'content-length', 'accept-encoding', 'x-api-key', 'connection',
]);

/** Everything a client can put in a request head, the gateway's key in both credential headers. */
const HOSTILE_HEADERS: Record<string, string> = {
  'x-api-key': KEYS.all,
  authorization: `Bearer ${KEYS.all}`,
  'proxy-authorization': `Basic ${Buffer.from(`u:${KEYS.all}`).toString('base64')}`,
  cookie: `session=${KEYS.all}`,
  'anthropic-version': '2023-06-01',
  'anthropic-beta': 'context-management-2025-06-27',
  'anthropic-dangerous-direct-browser-access': 'true',
  'x-stainless-lang': 'js',
  'x-stainless-retry-count': '0',
  'user-agent': 'attacker/1.0',
  accept: 'application/json',
  forwarded: 'for=1.2.3.4',
  'x-forwarded-for': '1.2.3.4',
  'x-forwarded-host': 'evil.example',
  'x-real-ip': '1.2.3.4',
  connection: 'keep-alive, x-hop-secret, x-stainless-os',
  'x-stainless-os': 'Linux',
  'x-hop-secret': 'hop',
  'keep-alive': 'timeout=5',
  'proxy-connection': 'keep-alive',
  te: 'trailers',
  upgrade: 'h2c',
  via: '1.1 attacker',
  'x-custom-secret': KEYS.all,
};

const BODY = { model: 'model-haiku-4.5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] };

/** Send `body` with `headers` to the gateway's native route, as the given framing; resolves with the status. */
function send(gw: TestGateway, headers: Record<string, string>, body: Buffer, framing: 'length' | 'chunked'): Promise<number> {
  const url = new URL('/v1/messages', gw.url);
  return new Promise((resolve, reject) => {
    const all: Record<string, string> = { 'content-type': 'application/json', ...headers };
    if (framing === 'length') all['content-length'] = String(body.length);
    const req = http.request({ hostname: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: all, agent: false });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    if (framing === 'chunked') {
      req.write(body.subarray(0, 10));
      req.end(body.subarray(10));
    } else {
      req.end(body);
    }
  });
}

/** Assert what the upstream saw of the last request: only allowed headers, our credential, no client secret. */
function expectCleanHead(gw: TestGateway): void {
  const seen = gw.upstream.requests[gw.upstream.requests.length - 1];
  const names = Object.keys(seen.headers);
  expect(names.filter((name) => !ALLOWED.has(name)), 'headers outside the allow list').to.deep.equal([]);
  expect(seen.headers['x-api-key']).to.equal(UPSTREAM_SECRET);
  expect(JSON.stringify(seen.headers)).to.not.include(KEYS.all);
  expect(seen.headers['anthropic-beta']).to.equal('context-management-2025-06-27');
  expect(seen.headers['transfer-encoding']).to.equal(undefined);
  expect(seen.headers['x-stainless-os'], 'a header the client named in Connection').to.equal(undefined);
  expect(seen.headers['content-encoding']).to.equal(undefined);
  expect(seen.headers['content-length']).to.equal(String(seen.raw.length));
  expect(JSON.parse(seen.raw.toString('utf8'))).to.deep.equal(BODY);
}

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`upstream request headers: an allow list (${storeKind} store)`, () => {
    let gw: TestGateway;
    const prefix = uniqueRedisPrefix('headers');
    before(async () => {
      gw = await startTestGateway({ store: storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined });
    });
    after(async () => {
      await gw.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('passes only the API headers and the gateway credential of a content-length request', async () => {
      expect(await send(gw, HOSTILE_HEADERS, Buffer.from(JSON.stringify(BODY)), 'length')).to.equal(200);
      expectCleanHead(gw);
    });

    it('sends a chunked request with one content-length and no transfer-encoding', async () => {
      expect(await send(gw, HOSTILE_HEADERS, Buffer.from(JSON.stringify(BODY)), 'chunked')).to.equal(200);
      expectCleanHead(gw);
    });

    it('sends an inflated gzip body without the client content-encoding', async () => {
      const gzipped = zlib.gzipSync(Buffer.from(JSON.stringify(BODY)));
      expect(await send(gw, { ...HOSTILE_HEADERS, 'content-encoding': 'gzip' }, gzipped, 'length')).to.equal(200);
      expectCleanHead(gw);
    });

    it('answers Expect: 100-continue itself and sends no expect upstream', async () => {
      expect(await send(gw, { ...HOSTILE_HEADERS, expect: '100-continue' }, Buffer.from(JSON.stringify(BODY)), 'length')).to.equal(200);
      expectCleanHead(gw);
    });
  });
}
