/**
 * The capabilities table and what the gateway does with it (lib/upstream/providers/): the features a
 * request needs, a request fitted to a target (refused betas and fields removed and named), and the
 * clouds' errors counted for the pool and rendered in the native shape.
 */
import { expect } from 'chai';
import { CAPABILITIES, FEATURES, featureNames } from '../../lib/upstream/providers/capabilities';
import { nativeCloudError, poolStatusOf } from '../../lib/upstream/providers/cloud-errors';
import { asksStream, featuresNeeded, fitRequestToTarget } from '../../lib/upstream/providers/request-for-target';
import { createProvider } from '../../lib/upstream/providers';
import { BEDROCK_BETAS } from '../helpers/fake-bedrock-rules';
import { FOUNDRY_BETAS } from '../helpers/fake-foundry';
import { VERTEX_BETAS } from '../helpers/vertex-rules';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const native = (body: object, headers: Record<string, string> = {}) => ({ method: 'POST', path: '/v1/messages', headers, body: json(body), stream: false });

describe('cloud capabilities', () => {
  it('cites a page on every row and gives the first-party API every feature', () => {
    for (const [name, row] of Object.entries(CAPABILITIES)) expect(row.source, name).to.match(/^https:\/\//);
    expect(featureNames(CAPABILITIES.anthropic.features)).to.have.length(Object.keys(FEATURES).length);
    expect(CAPABILITIES.bedrock.features & FEATURES.files).to.equal(0);
    expect(CAPABILITIES.vertex.features & FEATURES.web_search).to.equal(FEATURES.web_search);
    expect(CAPABILITIES.foundry.features & FEATURES.batches).to.equal(0);
  });

  it('sends Bedrock exactly the beta flags the fake Bedrock accepts (both from AWS\'s pages, compaction included)', () => {
    expect([...CAPABILITIES.bedrock.betas!].sort()).to.deep.equal([...BEDROCK_BETAS].sort());
    expect(CAPABILITIES.bedrock.betas!.has('compact-2026-01-12')).to.equal(true);
  });

  it('sends Vertex AI and Foundry no beta flag their fakes refuse (the fakes follow what each cloud answers 400 to)', () => {
    expect([...CAPABILITIES.vertex.betas!].filter((flag) => !VERTEX_BETAS.has(flag))).to.deep.equal([]);
    expect([...CAPABILITIES.foundry.betas!].filter((flag) => !FOUNDRY_BETAS.has(flag))).to.deep.equal([]);
  });

  const needs: Array<[string, Parameters<typeof featuresNeeded>[0], string[]]> = [
    ['a plain message', { path: '/v1/messages', headers: {}, body: json({ messages: [{ role: 'user', content: 'hi' }] }) }, []],
    ['a file_id source', { path: '/v1/messages', headers: {}, body: json({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'f' } }] }] }) }, ['files']],
    ['the words "file_id" in text only', { path: '/v1/messages', headers: {}, body: json({ messages: [{ role: 'user', content: 'what is "file_id"?' }] }) }, []],
    ['the Files API', { path: '/v1/files?limit=2', headers: {}, body: undefined }, ['files']],
    ['a batch', { path: '/v1/messages/batches', headers: {}, body: json({ requests: [] }) }, ['batches']],
    ['count_tokens', { path: '/v1/messages/count_tokens', headers: {}, body: json({}) }, ['count_tokens']],
    ['a beta that changes the reply', { path: '/v1/messages', headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14, code-execution-2025-08-25' }, body: json({}) }, ['code_execution']],
    ['server tools and a 1-hour cache', { path: '/v1/messages', headers: {}, body: json({ tools: [{ type: 'web_search_20250305', name: 'web_search' }], system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral', ttl: '1h' } }] }) }, ['cache_1h', 'web_search']],
  ];
  for (const [what, request, expected] of needs) {
    it(`reads what ${what} needs: ${expected.join(', ') || 'nothing'}`, () => {
      expect(featureNames(featuresNeeded(request))).to.deep.equal(expected);
    });
  }

  it('fits a request to Vertex: betas off its list and refused fields removed and named, the rest kept', () => {
    const request = native({ model: 'm', output_config: { effort: 'low' }, service_tier: 'auto', messages: [] }, { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14', 'anthropic-version': '2023-06-01' });
    const { request: fitted, dropped } = fitRequestToTarget(request, CAPABILITIES.vertex);
    expect(dropped).to.deep.equal(['claude-code-20250219', 'output_config', 'service_tier']);
    expect(fitted.headers).to.deep.equal({ 'anthropic-beta': 'interleaved-thinking-2025-05-14', 'anthropic-version': '2023-06-01' });
    expect(JSON.parse(fitted.body!.toString())).to.deep.equal({ model: 'm', messages: [] });
  });

  it('fits a request to Bedrock: eager_input_streaming removed from tools; an untouched request is the same object', () => {
    const request = native({ tools: [{ name: 'a', input_schema: {}, eager_input_streaming: true }, { name: 'b', input_schema: {} }] });
    const { request: fitted, dropped } = fitRequestToTarget(request, CAPABILITIES.bedrock);
    expect(dropped).to.deep.equal(['tools[].eager_input_streaming']);
    expect(JSON.parse(fitted.body!.toString()).tools).to.deep.equal([{ name: 'a', input_schema: {} }, { name: 'b', input_schema: {} }]);
    const plain = native({ messages: [] });
    expect(fitRequestToTarget(plain, CAPABILITIES.bedrock).request).to.equal(plain);
    // A field named only in text is not a field: the body goes as it is.
    const text = native({ messages: [{ role: 'user', content: 'set "output_config" please' }] });
    expect(fitRequestToTarget(text, CAPABILITIES.vertex)).to.deep.equal({ request: text, dropped: [] });
  });

  it('reads a stream request', () => {
    expect(asksStream(json({ stream: true }))).to.equal(true);
    expect(asksStream(json({ stream: false, messages: [{ content: '"stream":true' }] }))).to.equal(false);
  });

  const statuses: Array<[string, Parameters<typeof poolStatusOf>, number]> = [
    ['Bedrock ThrottlingException', ['bedrock', 400, { 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/' }], 429],
    ['Bedrock ServiceUnavailableException', ['bedrock', 500, { 'x-amzn-errortype': 'ServiceUnavailableException' }], 503],
    ['Bedrock ModelNotReadyException', ['bedrock', 429, { 'x-amzn-errortype': 'ModelNotReadyException:x' }], 503],
    ['Bedrock ValidationException', ['bedrock', 400, { 'x-amzn-errortype': 'ValidationException:x' }], 400],
    ['Vertex RESOURCE_EXHAUSTED', ['vertex', 429, {}], 429],
  ];
  for (const [what, args, status] of statuses) {
    it(`counts ${what} as ${status}`, () => expect(poolStatusOf(...args)).to.equal(status));
  }

  it('renders clouds\' errors in the native shape with their wording', () => {
    const bedrock = JSON.parse(nativeCloudError('bedrock', 429, { 'x-amzn-errortype': 'ThrottlingException:x' }, '{"message":"Too many requests, please wait before trying again."}').text);
    expect(bedrock).to.deep.equal({ type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests, please wait before trying again.' } });
    const vertex = JSON.parse(nativeCloudError('vertex', 429, {}, '[{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model","status":"RESOURCE_EXHAUSTED"}}]').text);
    expect(vertex.error).to.deep.equal({ type: 'rate_limit_error', message: 'Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model' });
    const already = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}';
    expect(nativeCloudError('vertex', 529, {}, already).text).to.equal(already);
    expect(JSON.parse(nativeCloudError('foundry', 502, {}, 'Bad Gateway').text).error).to.deep.equal({ type: 'api_error', message: 'Bad Gateway' });
    // The body it gives is its text parsed (the error path parses the upstream's body once).
    const rewritten = nativeCloudError('foundry', 400, {}, '{"error":{"code":"BadRequest","message":"too long"}}');
    expect(rewritten.body).to.deep.equal(JSON.parse(rewritten.text));
    const parsed = JSON.parse(already);
    expect(nativeCloudError('vertex', 529, {}, already, parsed).body).to.equal(parsed);
  });

  it('makes a provider by name (none for the first-party API), the cloud\'s module loaded by the registry', async () => {
    expect(createProvider({ provider: 'anthropic' })).to.equal(undefined);
    const foundry = createProvider({ provider: 'foundry', apiKey: 'k' })!;
    expect(foundry.name).to.equal('foundry');
    const prepared = await foundry.prepare(native({ model: 'catalogue-name', max_tokens: 1, messages: [] }, { 'anthropic-version': '2023-06-01' }), 'deployment-1', { url: new URL('http://127.0.0.1/anthropic'), basePath: '/anthropic' });
    expect(prepared.headers).to.deep.equal({ 'anthropic-version': '2023-06-01', 'x-api-key': 'k' });
    expect(JSON.parse(prepared.body!.toString()).model).to.equal('deployment-1');
  });
});
