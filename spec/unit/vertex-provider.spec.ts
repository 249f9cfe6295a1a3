/**
 * The Vertex AI provider's pure parts: the request it prepares (path, body, headers) from a native
 * request, and Google's error shape rewritten in the native one. Against the fake Vertex AI and the
 * official client: spec/integration/vertex-provider.spec.ts.
 */
import type http from 'node:http';
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { CloudCredentialError, type NativeUpstreamRequest } from '../../lib/upstream/providers/provider';
import { createVertexProvider, formatVertexOrigin, VERTEX_ANTHROPIC_VERSION } from '../../lib/upstream/providers/vertex';
import { nativeCloudError } from '../../lib/upstream/providers/cloud-errors';

/** A google-auth-library client's answer, as v10+ gives it (a `Headers`). */
const credentials = { getRequestHeaders: async () => new Headers({ Authorization: 'Bearer ya29.test', 'x-goog-user-project': 'billing-project' }) };
const target = { url: new URL('https://us-east5-aiplatform.googleapis.com'), basePath: '' };

function nativeRequest(body: Record<string, unknown>, path = '/v1/messages', headers: Record<string, string> = {}): NativeUpstreamRequest {
  return { method: 'POST', path, headers: { 'anthropic-version': '2023-06-01', ...headers }, body: Buffer.from(JSON.stringify(body)), stream: body.stream === true };
}

describe('vertex provider: prepare', () => {
  const provider = createVertexProvider({ projectId: 'my-project', region: 'us-east5', authClient: credentials });
  const message = { model: 'model-sonnet-4.6', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] };

  it('sends a whole message to :rawPredict, model out of the body, anthropic_version in it', async () => {
    const prepared = await provider.prepare(nativeRequest(message), 'claude-sonnet-4-6@20250929', target);
    expect(prepared.method).to.equal('POST');
    expect(prepared.path).to.equal('/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-6@20250929:rawPredict');
    const body = JSON.parse(prepared.body!.toString());
    expect(body).to.deep.equal({ max_tokens: 16, messages: message.messages, anthropic_version: VERTEX_ANTHROPIC_VERSION });
  });

  it('sends a stream to :streamRawPredict, stream kept in the body', async () => {
    const prepared = await provider.prepare(nativeRequest({ ...message, stream: true }), 'claude-sonnet-4-6', target);
    expect(prepared.path).to.match(/\/models\/claude-sonnet-4-6:streamRawPredict$/);
    expect(JSON.parse(prepared.body!.toString())).to.include({ stream: true, anthropic_version: VERTEX_ANTHROPIC_VERSION }).and.not.have.property('model');
  });

  it('sends count_tokens to count-tokens:rawPredict with the target\'s model ID in the body', async () => {
    const prepared = await provider.prepare(nativeRequest({ model: 'model-sonnet-4.6', messages: message.messages }, '/v1/messages/count_tokens?beta=true'), 'claude-sonnet-4-6', target);
    expect(prepared.path).to.equal('/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict');
    expect(JSON.parse(prepared.body!.toString())).to.deep.equal({ model: 'claude-sonnet-4-6', messages: message.messages, anthropic_version: VERTEX_ANTHROPIC_VERSION });
  });

  it('drops the version header and the ?beta=true marker, keeps anthropic-beta and adds Google\'s credential headers', async () => {
    const prepared = await provider.prepare(nativeRequest(message, '/v1/messages?beta=true', { 'anthropic-beta': 'interleaved-thinking-2025-05-14', 'user-agent': 'test' }), 'claude-sonnet-4-6', target);
    expect(prepared.path).to.not.include('?');
    expect(prepared.headers).to.deep.equal({
      'anthropic-beta': 'interleaved-thinking-2025-05-14', 'user-agent': 'test', authorization: 'Bearer ya29.test',
      'x-goog-user-project': 'billing-project', 'content-type': 'application/json',
    });
  });

  it('takes a plain-object credential answer (google-auth-library before v10)', async () => {
    const old = createVertexProvider({ projectId: 'p', region: 'global', authClient: { getRequestHeaders: async () => ({ Authorization: 'Bearer old' }) } });
    const prepared = await old.prepare(nativeRequest(message), 'claude-sonnet-4-6', target);
    expect(prepared.headers.authorization).to.equal('Bearer old');
    expect(prepared.path).to.match(/^\/v1\/projects\/p\/locations\/global\//);
  });

  it('keeps a model ID inside its path segment', async () => {
    const prepared = await provider.prepare(nativeRequest(message), 'evil/../../x:streamRawPredict?', target);
    expect(prepared.path).to.equal('/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/evil%2F..%2F..%2Fx%3AstreamRawPredict%3F:rawPredict');
    for (const bad of ['', '.', '..']) {
      await provider.prepare(nativeRequest(message), bad, target).then(() => expect.fail('resolved'), (error: Error) => expect(error.message).to.include('cannot be a path segment'));
    }
    expect(() => createVertexProvider({ projectId: '..', region: 'us-east5', authClient: credentials })).to.throw(/project ID/);
  });

  it('refuses routes Vertex AI does not serve, before fetching credentials', async () => {
    let asked = 0;
    const counting = createVertexProvider({ projectId: 'p', region: 'us-east5', authClient: { getRequestHeaders: async () => (asked++, new Headers({ authorization: 'Bearer x' })) } });
    for (const [method, path] of [['POST', '/v1/messages/batches'], ['GET', '/v1/models'], ['POST', '/v1/files']]) {
      await counting.prepare({ method, path, headers: {}, stream: false, body: Buffer.from('{}') }, 'm', target)
        .then(() => expect.fail('resolved'), (error: Error) => expect(error.message).to.include(`not ${method} ${path}`));
    }
    expect(asked).to.equal(0);
  });

  it('rejects with a CloudCredentialError (the library\'s message its cause) when the credentials fail or give no Authorization header', async () => {
    const failing = createVertexProvider({ projectId: 'p', region: 'us-east5', authClient: { getRequestHeaders: async () => { throw new Error('invalid_grant: Invalid JWT Signature.'); } } });
    const failed = await failing.prepare(nativeRequest(message), 'm', target).then(() => expect.fail('resolved'), (error: unknown) => error);
    expect(failed).to.be.instanceOf(CloudCredentialError);
    expect([(failed as CloudCredentialError).message, (failed as CloudCredentialError).detail]).to.deep.equal(['vertex credentials could not be obtained', 'invalid_grant: Invalid JWT Signature.']);
    const empty = createVertexProvider({ projectId: 'p', region: 'us-east5', authClient: { getRequestHeaders: async () => new Headers() } });
    const none = await empty.prepare(nativeRequest(message), 'm', target).then(() => expect.fail('resolved'), (error: unknown) => error);
    expect((none as CloudCredentialError).detail).to.include('no Authorization');
    // A request it cannot build is no credential failure.
    const refused = await failing.prepare({ ...nativeRequest(message), body: Buffer.from('{not json') }, 'm', target).then(() => expect.fail('resolved'), (error: unknown) => error);
    expect(refused).to.be.instanceOf(SyntaxError);
    expect(() => createVertexProvider({ projectId: 'p', region: 'r', authClient: {} })).to.throw(/getRequestHeaders/);
  });

  it('names the default origin of a region (global without a region prefix)', () => {
    expect(formatVertexOrigin('us-east5').href).to.equal('https://us-east5-aiplatform.googleapis.com/');
    expect(formatVertexOrigin('europe-west1').href).to.equal('https://europe-west1-aiplatform.googleapis.com/');
    expect(formatVertexOrigin('global').href).to.equal('https://aiplatform.googleapis.com/');
  });
});

describe('vertex provider: Google errors in the native shape', () => {
  const google = (code: number, status: string | undefined, message: string) => JSON.stringify({ error: { code, message, ...(status ? { status } : {}) } });
  const convert = (status: number, text: string) => nativeCloudError('vertex', status, {}, text).text;
  const cases: Array<[number, string | undefined, string]> = [
    [429, 'RESOURCE_EXHAUSTED', 'rate_limit_error'],
    [503, 'UNAVAILABLE', 'overloaded_error'],
    [400, 'INVALID_ARGUMENT', 'invalid_request_error'],
    [400, 'FAILED_PRECONDITION', 'invalid_request_error'],
    [403, 'PERMISSION_DENIED', 'permission_error'],
    [401, 'UNAUTHENTICATED', 'authentication_error'],
    [404, 'NOT_FOUND', 'not_found_error'],
    [504, 'DEADLINE_EXCEEDED', 'timeout_error'],
    [500, 'INTERNAL', 'api_error'],
    [429, undefined, 'rate_limit_error'],
    [503, 'SOMETHING_NEW', 'overloaded_error'],
    [502, undefined, 'api_error'],
  ];
  for (const [code, status, type] of cases) {
    it(`${code} ${status ?? '(no status)'} -> ${type}, Google's message kept`, () => {
      const native = convert(code, google(code, status, `words of ${code}`));
      expect(JSON.parse(native)).to.deep.equal({ type: 'error', error: { type, message: `words of ${code}` } });
    });
  }

  it('reads the first of a list of Google errors', () => {
    const list = JSON.stringify([{ error: { code: 429, message: 'Quota exceeded', status: 'RESOURCE_EXHAUSTED' } }]);
    expect(JSON.parse(convert(429, list))).to.deep.equal({ type: 'error', error: { type: 'rate_limit_error', message: 'Quota exceeded' } });
  });

  it('leaves a native error alone and gives a non-JSON body or an unknown shape as the message', () => {
    const native = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'x' }, request_id: 'req_vrtx_1' });
    expect(convert(400, native)).to.equal(native);
    expect(JSON.parse(convert(502, '<html>Bad Gateway</html>')).error).to.deep.equal({ type: 'api_error', message: '<html>Bad Gateway</html>' });
    expect(JSON.parse(convert(500, '{"error":"oops"}')).error).to.deep.equal({ type: 'api_error', message: '{"error":"oops"}' });
    expect(JSON.parse(convert(500, '[]')).error).to.deep.equal({ type: 'api_error', message: '[]' });
  });
});

describe('vertex provider: adaptReply', () => {
  const provider = createVertexProvider({ projectId: 'p', region: 'us-east5', authClient: credentials });
  const request = nativeRequest({ model: 'm', max_tokens: 1, messages: [] });
  /** An upstream reply: a stream with the status and headers the routes read. */
  function upstreamReply(statusCode: number, headers: http.IncomingHttpHeaders): PassThrough & { statusCode: number; headers: http.IncomingHttpHeaders; complete: boolean } {
    const reply = Object.assign(new PassThrough(), { statusCode, headers, complete: false });
    reply.on('end', () => (reply.complete = true));
    return reply;
  }
  const read = (stream: NodeJS.ReadableStream) => new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => resolve(Buffer.concat(chunks)));
  });

  it('returns a 200 reply itself', () => {
    const reply = upstreamReply(200, { 'content-type': 'text/event-stream' });
    expect(provider.adaptReply(reply as unknown as http.IncomingMessage, request)).to.equal(reply);
  });

  it('rewrites a Google error, status kept, content-length that of the new body', async () => {
    const google = JSON.stringify({ error: { code: 429, message: 'Quota exceeded', status: 'RESOURCE_EXHAUSTED' } });
    const reply = upstreamReply(429, { 'content-type': 'application/json; charset=UTF-8', 'content-length': String(google.length) });
    const adapted = provider.adaptReply(reply as unknown as http.IncomingMessage, request);
    expect(adapted.headers).to.not.have.property('content-length');
    reply.end(google);
    const body = await read(adapted);
    expect(adapted.statusCode).to.equal(429);
    expect(JSON.parse(body.toString())).to.deep.equal({ type: 'error', error: { type: 'rate_limit_error', message: 'Quota exceeded' } });
    expect(adapted.headers['content-length']).to.equal(String(body.length));
  });

  it('passes an error body over 64 KiB unchanged, byte for byte', async () => {
    const big = Buffer.alloc(200 * 1024, 'x');
    const reply = upstreamReply(500, { 'content-type': 'text/html' });
    const adapted = provider.adaptReply(reply as unknown as http.IncomingMessage, request);
    reply.end(big);
    expect((await read(adapted)).equals(big)).to.equal(true);
  });

  it('destroys the upstream reply when the adapted one is destroyed, and fails when the upstream fails or is cut', async () => {
    const reply = upstreamReply(503, {});
    provider.adaptReply(reply as unknown as http.IncomingMessage, request).destroy();
    await new Promise((r) => setImmediate(r));
    expect(reply.destroyed).to.equal(true);
    const failing = upstreamReply(503, {});
    const adapted = provider.adaptReply(failing as unknown as http.IncomingMessage, request);
    const failed = new Promise<Error>((resolve) => adapted.on('error', resolve));
    failing.destroy(new Error('socket hang up'));
    expect((await failed).message).to.equal('socket hang up');
    const cut = upstreamReply(429, {});
    const cutAdapted = provider.adaptReply(cut as unknown as http.IncomingMessage, request);
    const cutFailed = new Promise<Error>((resolve) => cutAdapted.on('error', resolve));
    cut.write('{"error":');
    cut.destroy();
    expect((await cutFailed).message).to.include('cut before its end');
  });
});
