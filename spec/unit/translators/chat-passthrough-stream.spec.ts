/**
 * Chat-completions pass-through, stream side: records pass as the upstream sent them, changed only for
 * a renamed model or the usage the gateway asked for on the client's behalf; a failure is a chat error
 * record, never `[DONE]`.
 */
import { expect } from 'chai';
import { createPassthroughStreamTransform } from '../../../translators/chat-passthrough-stream';

const chunk = (fields: Record<string, unknown>) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up-model', ...fields });
const text = (content: string, finish: string | null = null) => chunk({ choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
const usageChunk = chunk({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } });

describe('chat pass-through stream', () => {
  it('passes a record it need not change as the same data text', () => {
    const transform = createPassthroughStreamTransform({ rename: null, stripUsage: false });
    const data = text('Héllo');
    expect(transform.push({ data })).to.deep.equal([data]);
    expect(transform.push({ data: '[DONE]' })).to.deep.equal(['[DONE]']);
    expect(transform.closed).to.equal(true);
    expect(transform.end()).to.deep.equal([]);
  });

  it('renames the model to the canonical ID', () => {
    const transform = createPassthroughStreamTransform({ rename: { from: 'up-model', to: 'canonical' }, stripUsage: false });
    const [record] = transform.push({ data: text('a') });
    expect(record).to.include({ model: 'canonical' });
  });

  it('reads usage and finish reason, and removes the usage the client did not ask for', () => {
    const transform = createPassthroughStreamTransform({ rename: null, stripUsage: true });
    const [first] = transform.push({ data: chunk({ choices: [{ index: 0, delta: { content: 'a' }, finish_reason: 'stop' }], usage: null }) });
    expect(first).to.not.have.property('usage');
    expect(transform.stopReason).to.equal('stop');
    expect(transform.push({ data: usageChunk })).to.deep.equal([]);
    expect(transform.usage).to.include({ input_tokens: 10, cache_read_input_tokens: 2, output_tokens: 3 });
  });

  it('keeps the usage chunk for a client that asked for it', () => {
    const transform = createPassthroughStreamTransform({ rename: null, stripUsage: false });
    expect(transform.push({ data: usageChunk })).to.deep.equal([usageChunk]);
  });

  it('passes an error record and ends there, never with [DONE]', () => {
    const transform = createPassthroughStreamTransform({ rename: null, stripUsage: false });
    const data = JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } });
    expect(transform.push({ data })).to.deep.equal([data]);
    expect(transform.closed).to.equal(true);
    expect(transform.push({ data: '[DONE]' })).to.deep.equal([]);
  });

  it('ends a stream cut before [DONE], or a record that is not JSON, with a chat error record', () => {
    const cut = createPassthroughStreamTransform({ rename: null, stripUsage: false });
    cut.push({ data: text('a') });
    expect(cut.end()).to.deep.equal([{ error: { message: 'the upstream stream ended without [DONE]', type: 'server_error', param: null, code: 'upstream_error' } }]);
    const broken = createPassthroughStreamTransform({ rename: null, stripUsage: false });
    expect(broken.push({ data: '{not json' })).to.have.length(1);
    expect(broken.closed).to.equal(true);
    expect(broken.error).to.equal(undefined);
  });
});
