/** The reasons of a failed request (lib/upstream/attempt-chain.ts): read from error bodies, bounded, one line. */
import { PassThrough } from 'node:stream';
import type http from 'node:http';
import { expect } from 'chai';
import {
  boundReason, CHAIN_CHARS, discardReply, formatAttemptChain, MAX_ATTEMPTS, noteAttempt, noteLastReason, readErrorReason, REASON_CHARS,
  type AttemptChainHolder,
} from '../../lib/upstream/attempt-chain';

describe('attempt chain: why a request failed', () => {
  it('reads the type and message of a native or a chat-completions error body, and nothing of any other body', () => {
    expect(readErrorReason('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')).to.deep.equal({ type: 'overloaded_error', message: 'Overloaded' });
    expect(readErrorReason('{"error":{"message":"The engine is currently overloaded","type":"server_error","code":null}}'))
      .to.deep.equal({ type: 'server_error', message: 'The engine is currently overloaded' });
    expect(readErrorReason('{"error":{"code":"rate_limit_exceeded","message":"slow down"}}')).to.deep.equal({ type: 'rate_limit_exceeded', message: 'slow down' });
    for (const body of ['<html>502 Bad Gateway</html>', '', 'null', '{"error":"text"}', '{"error":{}}', '[1]']) expect(readErrorReason(body), body).to.equal(undefined);
  });

  it('keeps a reason on one line and at most REASON_CHARS characters', () => {
    expect(boundReason('  two\nlines\t here ')).to.equal('two lines here');
    const long = boundReason('x'.repeat(REASON_CHARS * 2));
    expect(long).to.have.length(REASON_CHARS);
    expect(long.endsWith('…')).to.equal(true);
  });

  it('writes the chain as target:status-or-code with the upstream\'s reason, bounded, and nothing without attempts', () => {
    const holder: AttemptChainHolder = {};
    expect(formatAttemptChain(holder.attempts)).to.equal(undefined);
    noteAttempt(holder, 'a', { status: 529, headers: {} });
    noteAttempt(holder, 'b', { error: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), timedOut: false, reusedSocket: false, requestSent: false });
    noteAttempt(holder, 'c', { error: new Error('slow'), timedOut: true, reusedSocket: false, requestSent: true });
    noteAttempt(holder, 'd', { status: 500, headers: {} });
    noteLastReason(holder, { type: 'api_error', message: 'Internal server error' });
    expect(formatAttemptChain(holder.attempts)).to.equal('a:529 -> b:ECONNREFUSED -> c:timeout -> d:500 api_error (Internal server error)');
    for (let i = 0; i < MAX_ATTEMPTS * 2; i++) noteAttempt(holder, 'e', { status: 529, headers: {} });
    expect(holder.attempts).to.have.length(MAX_ATTEMPTS);
    holder.attempts!.forEach((attempt) => (attempt.reason = { type: 'overloaded_error', message: 'y'.repeat(REASON_CHARS) }));
    expect(formatAttemptChain(holder.attempts)).to.have.length(CHAIN_CHARS);
  });

  it('reads a discarded reply\'s error body on the side, credentials redacted, at most 4 KiB', async () => {
    const holder: AttemptChainHolder = {};
    const attempt = noteAttempt(holder, 'a', { status: 529, headers: {} });
    const body = new PassThrough();
    discardReply(body as unknown as http.IncomingMessage, attempt, (text) => text.split('secret-1').join('[redacted]'));
    body.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: `busy for secret-1 ${'z'.repeat(8000)}` } }));
    await new Promise((resolve) => body.once('end', resolve));
    // The body was cut at 4 KiB: no longer JSON, so no reason is made up from it.
    expect(attempt!.reason).to.equal(undefined);
    const small = noteAttempt(holder, 'b', { status: 529, headers: {} });
    const reply = new PassThrough();
    discardReply(reply as unknown as http.IncomingMessage, small, (text) => text.split('secret-1').join('[redacted]'));
    reply.end('{"type":"error","error":{"type":"overloaded_error","message":"busy for secret-1"}}');
    await new Promise((resolve) => reply.once('end', resolve));
    expect(small!.reason).to.deep.equal({ type: 'overloaded_error', message: 'busy for [redacted]' });
  });
});
