/**
 * `npm run fake-upstream`: its flags (node:util parseArgs) and the behaviours they give the tests' fake
 * upstream: the API's 529 `overloaded_error` or 429 `rate_limit_error` with `retry-after`
 * (https://docs.anthropic.com/en/api/errors), latency, paced streams.
 */
import { expect } from 'chai';
import { createBehaviourHandler, parseFakeUpstreamArgs } from '../helpers/fake-upstream-cli';
import type { RecordedRequest } from '../helpers/fake-upstream';

const request = (body: Record<string, unknown>): RecordedRequest => ({ method: 'POST', url: '/v1/messages?beta=true', headers: {}, body, raw: Buffer.from(JSON.stringify(body)) });
const BEHAVIOUR = { latencyMs: 0, errorRate: 0, errorStatus: 529 as const, streamPauseMs: 0 };

describe('fake-upstream command line', () => {
  it('reads the documented flags, with their defaults', () => {
    expect(parseFakeUpstreamArgs(['--port', '9002', '--latency-ms', '200', '--error-rate', '0.2', '--error-status', '429']))
      .to.deep.equal({ port: 9002, latencyMs: 200, errorRate: 0.2, errorStatus: 429, streamPauseMs: 0 });
    expect(parseFakeUpstreamArgs(['--port', '9001'])).to.deep.equal({ port: 9001, ...BEHAVIOUR });
  });

  it('refuses a missing port, a value out of range and an unknown flag, naming it', () => {
    expect(() => parseFakeUpstreamArgs([])).to.throw(/--port/);
    expect(() => parseFakeUpstreamArgs(['--port', '9001', '--error-rate', '2'])).to.throw(/--error-rate: "2"/);
    expect(() => parseFakeUpstreamArgs(['--port', '9001', '--error-status', '500'])).to.throw(/--error-status: "500"/);
    expect(() => parseFakeUpstreamArgs(['--port', '9001', '--fail'])).to.throw(/--fail/);
  });

  it('answers the error the API sends, at the rate asked: 529 overloaded_error, 429 rate_limit_error with retry-after', () => {
    const overloaded = createBehaviourHandler({ ...BEHAVIOUR, errorRate: 0.5 }, () => 0.4)(request({ model: 'm', max_tokens: 5, messages: [] }));
    expect(overloaded).to.deep.include({ kind: 'json', status: 529 });
    expect((overloaded as any).body.error.type).to.equal('overloaded_error');
    const limited = createBehaviourHandler({ ...BEHAVIOUR, errorRate: 0.5, errorStatus: 429 }, () => 0.4)(request({ model: 'm', max_tokens: 5, messages: [] }));
    expect(limited).to.deep.include({ status: 429, headers: { 'retry-after': '1' } });
    expect(createBehaviourHandler({ ...BEHAVIOUR, errorRate: 0.5 }, () => 0.6)(request({ model: 'm', max_tokens: 5, messages: [] }))).to.deep.include({ kind: 'json', delayMs: 0 });
  });

  it('delays a reply by --latency-ms and paces a stream\'s deltas by --stream-pause-ms', () => {
    const handler = createBehaviourHandler({ ...BEHAVIOUR, latencyMs: 150, streamPauseMs: 40 });
    expect(handler(request({ model: 'm', max_tokens: 5, messages: [] }))).to.deep.include({ kind: 'json', delayMs: 150 });
    const stream = handler(request({ model: 'm', max_tokens: 5, stream: true, messages: [] })) as { kind: 'stream'; events: any[] };
    expect(stream.events[0]).to.deep.equal({ pauseMs: 150 });
    const deltas = stream.events.flatMap((item, i) => (item.event === 'content_block_delta' ? [stream.events[i - 1]] : []));
    expect(deltas).to.deep.equal([{ pauseMs: 40 }, { pauseMs: 40 }]);
  });
});
