/**
 * The Bedrock provider (lib/upstream/providers/bedrock.ts) against the fake Bedrock runtime
 * (spec/helpers/fake-bedrock.ts, shown correct with the official clients in fake-bedrock.spec.ts):
 * the provider's requests are sent to it with node:http and its replies read through `adaptReply`.
 */
import http from 'node:http';
import { expect } from 'chai';
import { createBedrockProvider, type BedrockSettings } from '../../lib/upstream/providers/bedrock';
import { CloudCredentialError, type NativeUpstreamRequest } from '../../lib/upstream/providers/provider';
import { DEFAULT_METRICS, fakeTokenCount, startFakeBedrock, THROTTLED, type FakeBedrock } from '../helpers/fake-bedrock';
import { nativeMessage, nativeTextEvents } from '../helpers/fake-upstream';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'AKIDFAKEBEDROCK', secretAccessKey: 'fake-secret-key/for+tests' };
const API_KEY = 'ABSKfake-bedrock-api-key';
const PROFILE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const BASE = 'anthropic.claude-sonnet-4-5-20250929-v1:0';
const ARN = 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4';
const METRICS = DEFAULT_METRICS;

/** The first-party API's SSE of `events`: what a native client gets from the API itself. */
const firstPartySse = (events: Array<{ event: string; data: unknown }>) => events.map((e) => `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`).join('');

/** The records of an SSE text. */
const sseRecords = (text: string) => text.split('\n\n').filter(Boolean).map((record) => {
  const [eventLine, dataLine] = record.split('\n');
  return { event: eventLine.slice('event: '.length), data: JSON.parse(dataLine.slice('data: '.length)) };
});

function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(Buffer.from(c)));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
  });
}

function nativeRequest(body: Record<string, unknown>, extra: { path?: string; beta?: string } = {}): NativeUpstreamRequest {
  return {
    method: 'POST', path: extra.path ?? '/v1/messages', stream: body.stream === true, body: Buffer.from(JSON.stringify(body)),
    headers: { 'anthropic-version': '2023-06-01', ...(extra.beta ? { 'anthropic-beta': extra.beta } : {}) },
  };
}

const hello = (extra: Record<string, unknown> = {}) => ({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], ...extra });

describe('Bedrock provider', function () {
  this.timeout(30_000);
  let fake: FakeBedrock;
  before(async () => {
    fake = await startFakeBedrock({ region: REGION, credentials: CREDENTIALS, apiKey: API_KEY, models: [PROFILE, BASE, ARN] });
  });
  after(() => fake.close());
  beforeEach(() => fake.reset());

  /** Send `request` to the fake through a provider; the adapted reply's status, headers and body. */
  async function send(request: NativeUpstreamRequest, modelId = PROFILE, settings: Partial<BedrockSettings> = {}) {
    const provider = createBedrockProvider({ region: REGION, credentials: async () => CREDENTIALS, ...settings });
    const url = new URL(fake.url);
    const prepared = await provider.prepare(request, modelId, { url, basePath: '' });
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ hostname: url.hostname, port: url.port, method: prepared.method, path: prepared.path, headers: { ...prepared.headers, 'content-length': String(prepared.body?.length ?? 0) } });
      req.once('response', resolve).once('error', reject);
      req.end(prepared.body);
    });
    const adapted = provider.adaptReply(response, request);
    return { status: adapted.statusCode, headers: adapted.headers, text: await readAll(adapted), adapted };
  }

  describe('the provider', () => {
    it('sends a whole message as InvokeModel: version and betas in the body, no model or stream, the profile ID encoded', async () => {
      const reply = await send(nativeRequest(hello(), { beta: 'context-1m-2025-08-07, interleaved-thinking-2025-05-14' }));
      expect(reply.status).to.equal(200);
      expect(JSON.parse(reply.text)).to.deep.equal(nativeMessage('Hello, world', { input_tokens: 10, output_tokens: 5 }, 'claude-bedrock'));
      const record = fake.records[0];
      expect(record.url).to.equal('/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke');
      expect(record.body).to.deep.equal({
        anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['context-1m-2025-08-07', 'interleaved-thinking-2025-05-14'], max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(record.headers).to.not.have.any.keys('anthropic-beta', 'anthropic-version', 'x-api-key');
      expect(reply.headers['request-id']).to.equal('fake-request-1');
    });

    it('signs a path whose model ID is an ARN (":" and "/" encoded as the AWS SDK does)', async () => {
      const reply = await send(nativeRequest(hello()), ARN);
      expect(reply.status).to.equal(200);
      expect(fake.records[0].modelId).to.equal(ARN);
      expect(fake.records[0].url).to.equal(`/model/${encodeURIComponent(ARN)}/invoke`);
    });

    it('fills a whole reply\'s missing usage from the token-count headers', async () => {
      fake.setScript(() => ({ kind: 'reply', usage: { input_tokens: 31, output_tokens: 7 }, omitUsage: true }));
      const reply = await send(nativeRequest(hello()));
      expect(JSON.parse(reply.text).usage).to.deep.equal({ input_tokens: 31, output_tokens: 7 });
    });

    it('relays a stream as the same SSE events as the first-party API, the invocation metrics removed', async () => {
      const reply = await send(nativeRequest(hello({ stream: true })));
      expect(reply.status).to.equal(200);
      expect(reply.headers['content-type']).to.equal('text/event-stream');
      expect(reply.headers).to.not.have.property('content-length');
      expect(fake.records[0].url).to.match(/\/invoke-with-response-stream$/);
      expect(fake.records[0].body).to.not.have.any.keys('stream', 'model');
      const expected = nativeTextEvents(['Hello', ', world'], undefined, 'claude-bedrock');
      expect(sseRecords(reply.text)).to.deep.equal(expected);
      expect(reply.text).to.equal(firstPartySse(expected));
    });

    it('takes usage from the invocation metrics when the stream\'s events lack it', async () => {
      fake.setScript(() => ({ kind: 'events', events: nativeTextEvents(['Hi']), omitUsage: true, metrics: { ...METRICS, inputTokenCount: 120, outputTokenCount: 33 } }));
      const records = sseRecords((await send(nativeRequest(hello({ stream: true })))).text);
      expect(records.map((r) => r.event)).to.deep.equal(nativeTextEvents(['Hi']).map((e) => e.event));
      expect(records.find((r) => r.event === 'message_delta')!.data.usage).to.deep.equal({ input_tokens: 120, output_tokens: 33 });
      expect(JSON.stringify(records)).to.not.include('invocationMetrics');
    });

    it('maps a ThrottlingException to the API\'s 429 rate_limit_error, Bedrock\'s wording kept', async () => {
      fake.setScript(() => THROTTLED);
      for (const stream of [false, true]) {
        const reply = await send(nativeRequest(hello({ stream })));
        expect(reply.status).to.equal(429);
        expect(reply.headers['content-type']).to.equal('application/json');
        expect(reply.headers).to.not.have.property('content-length');
        expect(JSON.parse(reply.text)).to.deep.equal({ type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests, please wait before trying again.' } });
      }
    });

    it('maps Bedrock\'s other errors by exception name', async () => {
      const cases: Array<[number, string, number, string]> = [
        [429, 'ModelNotReadyException', 503, 'overloaded_error'], [503, 'ServiceUnavailableException', 503, 'overloaded_error'],
        [400, 'ValidationException', 400, 'invalid_request_error'], [403, 'AccessDeniedException', 403, 'permission_error'],
        [404, 'ResourceNotFoundException', 404, 'not_found_error'], [408, 'ModelTimeoutException', 504, 'timeout_error'],
        [500, 'InternalServerException', 500, 'api_error'],
      ];
      for (const [status, errorType, expectedStatus, expectedType] of cases) {
        fake.setScript(() => ({ kind: 'error', status, errorType, message: `${errorType} wording` }));
        const reply = await send(nativeRequest(hello()));
        expect([reply.status, JSON.parse(reply.text)], errorType).to.deep.equal([expectedStatus, { type: 'error', error: { type: expectedType, message: `${errorType} wording` } }]);
      }
    });

    it('turns an exception frame into the API\'s error event and ends the stream there', async () => {
      for (const [type, nativeType] of [['modelStreamErrorException', 'api_error'], ['throttlingException', 'rate_limit_error']]) {
        fake.setScript(() => ({ kind: 'events', events: nativeTextEvents(['Hello', ', world']), exception: { after: 4, type, message: `${type}: Bedrock's wording` } }));
        const records = sseRecords((await send(nativeRequest(hello({ stream: true })))).text);
        expect(records.map((r) => r.event)).to.deep.equal(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'error']);
        expect(records.at(-1)!.data).to.deep.equal({ type: 'error', error: { type: nativeType, message: `${type}: Bedrock's wording` } });
      }
    });

    it('counts tokens with CountTokens for the base model of an inference profile', async () => {
      const body = { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Count me' }] };
      const reply = await send(nativeRequest(body, { path: '/v1/messages/count_tokens', beta: 'context-1m-2025-08-07' }));
      expect(reply.status).to.equal(200);
      expect(fake.records[0].url).to.equal(`/model/${encodeURIComponent(BASE)}/count-tokens`);
      const inner = JSON.parse(Buffer.from(fake.records[0].body.input.invokeModel.body, 'base64').toString('utf8'));
      expect(inner).to.deep.equal({ anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['context-1m-2025-08-07'], messages: body.messages, max_tokens: 1 });
      expect(JSON.parse(reply.text)).to.deep.equal({ input_tokens: fakeTokenCount(inner) });
    });

    it('passes Bedrock\'s refusal of a beta flag or a body field on in the native error shape', async () => {
      const beta = await send(nativeRequest(hello(), { beta: 'files-api-2025-04-14' }));
      expect([beta.status, JSON.parse(beta.text)]).to.deep.equal([400, { type: 'error', error: { type: 'invalid_request_error', message: 'invalid beta flag' } }]);
      const tools = [{ name: 'read', input_schema: { type: 'object' }, eager_input_streaming: true }];
      const field = await send(nativeRequest(hello({ tools })));
      expect(field.status).to.equal(400);
      expect(JSON.parse(field.text).error.message).to.include('extraneous key [eager_input_streaming]');
    });

    it('sends a Bedrock API key as a bearer token, unsigned', async () => {
      const reply = await send(nativeRequest(hello()), PROFILE, { apiKey: API_KEY, credentials: undefined });
      expect(reply.status).to.equal(200);
      expect(fake.records[0].headers.authorization).to.equal(`Bearer ${API_KEY}`);
      expect(fake.records[0].headers).to.not.have.property('x-amz-date');
    });

    it('reports a refused signature as the API\'s authentication error, and sends nothing without credentials', async () => {
      const reply = await send(nativeRequest(hello()), PROFILE, { credentials: async () => ({ ...CREDENTIALS, secretAccessKey: 'wrong' }) });
      expect(reply.status).to.equal(401);
      expect(JSON.parse(reply.text).error).to.deep.include({ type: 'authentication_error' });
      fake.records.length = 0;
      const failed = await send(nativeRequest(hello()), PROFILE, { credentials: async () => Promise.reject(new Error('no credentials in the chain')) }).catch((e) => e);
      expect(failed).to.be.instanceOf(CloudCredentialError);
      expect(failed.detail).to.equal('no credentials in the chain');
      const empty = await send(nativeRequest(hello()), PROFILE, { credentials: async () => ({}) as never }).catch((e) => e);
      expect(empty.detail).to.equal('the AWS credential provider gave no access key');
      expect(fake.records).to.have.length(0);
    });

    it('reads the upstream no faster than a paused reader takes the SSE, and stops it when the reader leaves', async () => {
      const sent = { bytes: 0 };
      let closed!: () => void;
      const upstreamClosed = new Promise<void>((resolve) => (closed = resolve));
      fake.setScript(() => ({ kind: 'events', events: nativeTextEvents(['a', 'b']), bulk: { times: 20_000, sent } }));
      const provider = createBedrockProvider({ region: REGION, credentials: async () => CREDENTIALS });
      const url = new URL(fake.url);
      const request = nativeRequest(hello({ stream: true }));
      const prepared = await provider.prepare(request, PROFILE, { url, basePath: '' });
      const response = await new Promise<http.IncomingMessage>((resolve) => {
        const req = http.request({ hostname: url.hostname, port: url.port, method: 'POST', path: prepared.path, headers: prepared.headers });
        req.once('response', resolve).end(prepared.body);
      });
      response.socket.once('close', () => closed());
      const adapted = provider.adaptReply(response, request);
      await new Promise((r) => setTimeout(r, 600));
      const total = 20_000 * 1_400;
      // Paused: only what the socket buffers and the adapter's small buffers hold has been written.
      expect(sent.bytes).to.be.greaterThan(0).and.lessThan(total / 3);
      const before = sent.bytes;
      await new Promise((r) => setTimeout(r, 300));
      expect(sent.bytes).to.equal(before);
      adapted.destroy();
      await upstreamClosed;
    });
  });
});
