/**
 * The Bedrock event-stream adapter (lib/upstream/providers/bedrock-stream.ts) fed bytes directly: frames
 * split at every byte boundary and in random pieces give the same SSE as whole frames; a frame cut short
 * or corrupted ends the stream with an error event; and the pure parts of the provider (body, model IDs,
 * error mapping, usage from headers).
 */
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import fc from 'fast-check';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { convertBody, encodeModelId, toCountTokensModelId } from '../../lib/upstream/providers/bedrock';
import { convertCountTokensReply, fillUsageFromHeaders } from '../../lib/upstream/providers/bedrock-replies';
import { nativeCloudError } from '../../lib/upstream/providers/cloud-errors';
import { createEventStreamToSse } from '../../lib/upstream/providers/bedrock-stream';
import { encodeChunkFrame, encodeExceptionFrame } from '../helpers/fake-bedrock';
import { nativeTextEvents } from '../helpers/fake-upstream';

const EVENTS = nativeTextEvents(['Hello', ', wörld ✓', '!']);
const METRICS = { inputTokenCount: 10, outputTokenCount: 5, invocationLatency: 9, firstByteLatency: 3 };
const STREAM = Buffer.concat(EVENTS.map((e, i) => encodeChunkFrame(i === EVENTS.length - 1 ? { ...(e.data as object), 'amazon-bedrock-invocationMetrics': METRICS } : e.data)));
const EXPECTED = EVENTS.map((e) => `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`).join('');

/** The SSE text the adapter writes for `pieces` fed in order. */
function convert(pieces: Buffer[]): Promise<string> {
  const adapter = createEventStreamToSse(new EventStreamCodec(toUtf8, fromUtf8));
  const out: Buffer[] = [];
  adapter.on('data', (c: Buffer) => out.push(c));
  return new Promise((resolve, reject) => {
    adapter.once('end', () => resolve(Buffer.concat(out).toString('utf8')));
    adapter.once('error', reject);
    for (const piece of pieces) adapter.write(piece);
    adapter.end();
  });
}

describe('Bedrock event stream to SSE', () => {
  it('converts whole frames to the first-party SSE, the metrics removed', async () => {
    expect(await convert([STREAM])).to.equal(EXPECTED);
  });

  it('gives the same SSE with the bytes split at every boundary', async () => {
    for (let at = 1; at < STREAM.length; at++) {
      expect(await convert([STREAM.subarray(0, at), STREAM.subarray(at)]), `split at ${at}`).to.equal(EXPECTED);
    }
  });

  it('gives the same SSE in any pieces, and one byte at a time', async () => {
    expect(await convert([...STREAM].map((byte) => Buffer.from([byte])))).to.equal(EXPECTED);
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: STREAM.length - 1 }), { maxLength: 12 }), async (cuts) => {
      const points = [0, ...cuts.sort((a, b) => a - b), STREAM.length];
      const pieces = points.slice(1).map((end, i) => STREAM.subarray(points[i], end));
      expect(await convert(pieces)).to.equal(EXPECTED);
    }), { numRuns: 60 });
  });

  it('writes each event as soon as its frame is whole', async () => {
    const adapter = createEventStreamToSse(new EventStreamCodec(toUtf8, fromUtf8));
    const first = encodeChunkFrame(EVENTS[0].data);
    const got = new Promise<string>((resolve) => adapter.once('data', (c: Buffer) => resolve(c.toString('utf8'))));
    adapter.write(first);
    expect(await got).to.equal(`event: message_start\ndata: ${JSON.stringify(EVENTS[0].data)}\n\n`);
    adapter.destroy();
  });

  it('ends with an error event when the stream stops inside a frame, or a frame is corrupt', async () => {
    const cut = await convert([STREAM.subarray(0, STREAM.length - 7)]);
    expect(cut.startsWith(EXPECTED.split('event: message_stop')[0])).to.equal(true);
    expect(cut).to.match(/event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"the Bedrock event stream ended inside a frame/);
    const corrupt = Buffer.from(STREAM);
    corrupt[20] ^= 0xff;
    expect(await convert([corrupt])).to.match(/^event: error\ndata: .*could not be read/);
  });

  it('refuses a frame declaring more than 16 MiB before buffering it', async () => {
    const huge = Buffer.alloc(8);
    huge.writeUInt32BE(64 * 1024 * 1024, 0);
    expect(await convert([huge])).to.match(/^event: error\ndata: .*declares 67108864 bytes/);
  });

  it('fills only the usage fields the events lack from the invocation metrics', async () => {
    const events = nativeTextEvents(['Hi']).map((e) => (e.event === 'message_start'
      ? { ...e, data: { ...(e.data as any), message: { ...(e.data as any).message, usage: {} } } } : e));
    const stream = Buffer.concat(events.map((e, i) => encodeChunkFrame(i === events.length - 1 ? { ...(e.data as object), 'amazon-bedrock-invocationMetrics': { ...METRICS, inputTokenCount: 77, outputTokenCount: 99 } } : e.data)));
    const text = await convert([stream]);
    const delta = text.split('\n\n').find((record) => record.startsWith('event: message_delta'))!;
    // The event's own output count (5) stands; the input count it lacked comes from the metrics.
    expect(JSON.parse(delta.split('data: ')[1]).usage).to.deep.equal({ input_tokens: 77, output_tokens: 5 });
    expect(text.indexOf('event: message_delta')).to.be.lessThan(text.indexOf('event: message_stop'));
  });

  it('turns an exception frame into an error event with Bedrock\'s wording, ignoring what follows', async () => {
    const stream = Buffer.concat([encodeChunkFrame(EVENTS[0].data), encodeExceptionFrame('throttlingException', 'Too many tokens, please wait before trying again.'), encodeChunkFrame(EVENTS[1].data)]);
    expect(await convert([stream])).to.equal(`event: message_start\ndata: ${JSON.stringify(EVENTS[0].data)}\n\n`
      + 'event: error\ndata: {"type":"error","error":{"type":"rate_limit_error","message":"Too many tokens, please wait before trying again."}}\n\n');
  });
});

describe('Bedrock request and reply mapping', () => {
  it('loads no AWS package until a Bedrock provider is made, and no signer or credential chain for an API key', () => {
    const probe = (make: string) => execFileSync(process.execPath, ['-e', `
      const loaded = () => Object.keys(require.cache).filter((f) => /node_modules[\\/]@(smithy|aws-sdk|aws-crypto)[\\/]/.test(f)).map((f) => f.split(/node_modules[\\/]/).pop().split(/[\\/]/).slice(0, 2).join('/'));
      const { createBedrockProvider } = require(${JSON.stringify(require.resolve('../../lib/upstream/providers/bedrock'))});
      const before = loaded();
      ${make};
      console.log(JSON.stringify({ before, after: [...new Set(loaded())] }));`], { encoding: 'utf8' });
    const withKey = JSON.parse(probe(`createBedrockProvider({ region: 'us-east-1', apiKey: 'k' })`));
    expect(withKey.before).to.deep.equal([]);
    expect(withKey.after).to.include('@smithy/eventstream-codec').and.not.include('@smithy/signature-v4').and.not.include('@aws-sdk/credential-provider-node');
    const signed = JSON.parse(probe(`createBedrockProvider({ region: 'us-east-1' })`));
    expect(signed.after).to.include.members(['@smithy/signature-v4', '@aws-crypto/sha256-js', '@aws-sdk/credential-provider-node']);
  });

  it('builds the Bedrock body: version and betas set, model, stream and a client\'s own version or betas dropped', () => {
    const body = Buffer.from(JSON.stringify({ model: 'm', stream: true, anthropic_version: 'x', anthropic_beta: ['smuggled'], max_tokens: 5, messages: [] }));
    expect(convertBody(body, 'a-1, b-2,,a-1')).to.deep.equal({ anthropic_version: 'bedrock-2023-05-31', anthropic_beta: ['a-1', 'b-2'], max_tokens: 5, messages: [] });
    expect(convertBody(body, undefined)).to.not.have.property('anthropic_beta');
    expect(() => convertBody(Buffer.from('[]'), undefined)).to.throw(/JSON object/);
  });

  it('encodes model IDs as the AWS SDK does and maps inference profiles to base IDs for CountTokens', () => {
    expect(encodeModelId("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x-v1:0(!'*)")).to.equal('arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.anthropic.x-v1%3A0%28%21%27%2A%29');
    const cases: Array<[string, string]> = [
      ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'anthropic.claude-sonnet-4-5-20250929-v1:0'], ['global.anthropic.claude-opus-4-6-v1', 'anthropic.claude-opus-4-6-v1'],
      ['eu.anthropic.claude-haiku-4-5', 'anthropic.claude-haiku-4-5'], ['anthropic.claude-sonnet-4-6', 'anthropic.claude-sonnet-4-6'],
      ['arn:aws:bedrock:us-east-1:1:application-inference-profile/abc', 'arn:aws:bedrock:us-east-1:1:application-inference-profile/abc'],
    ];
    for (const [given, expected] of cases) expect(toCountTokensModelId(given), given).to.equal(expected);
  });

  it('maps an error reply, keeping Bedrock\'s wording, and one that is not JSON', () => {
    const convert = (status: number, errorType: string | undefined, text: string) => JSON.parse(nativeCloudError('bedrock', status, errorType ? { 'x-amzn-errortype': errorType } : {}, text).text);
    expect(convert(429, 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/', '{"message":"Too many requests"}'))
      .to.deep.equal({ type: 'error', error: { type: 'rate_limit_error', message: 'Too many requests' } });
    expect(convert(502, undefined, '<html>bad gateway</html>')).to.deep.equal({ type: 'error', error: { type: 'api_error', message: '<html>bad gateway</html>' } });
    expect(convert(418, 'SomethingNewException', '').error.message).to.equal('the bedrock upstream answered 418 (SomethingNewException)');
  });

  it('fills usage from the token-count headers only when the body has none', () => {
    const headers = { 'x-amzn-bedrock-input-token-count': '12', 'x-amzn-bedrock-output-token-count': '3' };
    expect(JSON.parse(fillUsageFromHeaders(Buffer.from('{"type":"message"}'), headers).toString())).to.deep.equal({ type: 'message', usage: { input_tokens: 12, output_tokens: 3 } });
    const withUsage = Buffer.from('{"usage":{"input_tokens":1,"output_tokens":2}}');
    expect(fillUsageFromHeaders(withUsage, headers)).to.equal(withUsage);
    expect(convertCountTokensReply(Buffer.from('{"inputTokens":7}')).toString()).to.equal('{"input_tokens":7}');
  });
});
