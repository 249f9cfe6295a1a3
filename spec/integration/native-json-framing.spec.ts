/**
 * A native non-streaming reply is re-framed by the gateway (it reads the body for usage and the model
 * name). Whatever framing the upstream used, the client must get one valid framing: a content-length
 * and no transfer-encoding. (Found by the benchmark: a chunked upstream reply came out with both,
 * which Node's and undici's HTTP parsers reject.)
 */
import http from 'node:http';
import { expect } from 'chai';
import { nativeMessage } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';

function post(url: string, body: unknown): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-length': Buffer.byteLength(payload) },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.once('error', reject);
    });
    req.end(payload);
  });
}

describe('native non-streaming reply framing', () => {
  let gw: TestGateway;
  afterEach(async () => gw?.close());

  for (const framing of ['chunked', 'content-length'] as const) {
    it(`passes a ${framing} upstream reply to the client with a content-length only`, async () => {
      const message = nativeMessage('Hello, world');
      const text = JSON.stringify(message);
      gw = await startTestGateway({
        handler: () => ({
          kind: 'json',
          body: message,
          headers: (framing === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(Buffer.byteLength(text)) }) as Record<string, string>,
        }),
      });
      const reply = await post(gw.url, { model: 'sonnet', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] });
      expect(reply.status).to.equal(200);
      expect(reply.headers['transfer-encoding']).to.equal(undefined);
      expect(reply.headers['content-length']).to.equal(String(Buffer.byteLength(reply.body)));
      expect(JSON.parse(reply.body)).to.deep.include({ type: 'message', model: 'model-sonnet-4.6' });
    });
  }
});
