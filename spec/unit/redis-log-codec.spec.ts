/** The Redis request log entry (lib/store/redis-spend.ts): values only, trailing nulls left out, old entries still read. */
import { expect } from 'chai';
import { decodeLogEntry, encodeLogRecord } from '../../lib/store/redis-spend';
import type { RequestLogRecord } from '../../lib/store/types';

const served: RequestLogRecord = {
  time: 1, requestId: 'req_1', keyId: 'k', keyGroup: 'default', route: 'POST /v1/messages', model: 'model-sonnet-4.6', status: 200, stopReason: 'end_turn',
  inputTokens: 3, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.5, firstByteMs: 2, durationMs: 3, streamed: false,
  clientAborted: false, sessionId: null, agentId: null, upstreamTarget: 'a', errorType: null, errorMessage: null, upstreamAttempts: null,
};

describe('Redis request log entries', () => {
  it('leaves out the trailing nulls of a served request (its entry does not grow by the failure fields) and reads them back as null', () => {
    const encoded = encodeLogRecord(served);
    expect(encoded.endsWith('"a"]')).to.equal(true);
    expect(decodeLogEntry({ r: encoded })).to.deep.equal(served);
  });

  it('round-trips a failed request\'s error and attempt chain', () => {
    const failed = { ...served, status: 502, upstreamTarget: null, errorType: 'api_error', errorMessage: 'unreachable', upstreamAttempts: 'a:529 -> b:ECONNREFUSED' };
    expect(decodeLogEntry({ r: encodeLogRecord(failed) })).to.deep.equal(failed);
  });
});
