import { expect } from 'chai';
import { addCacheBreakpoints, type CacheableRequest } from '../../../translators/prompt-cache';

const LONG = 'x'.repeat(5000);

function request(overrides: Partial<CacheableRequest> = {}): CacheableRequest {
  return {
    tools: [{ name: 'a', input_schema: {} }, { name: 'b', input_schema: {} }],
    system: LONG,
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Hi' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }, { type: 'tool_use', id: 'toolu_1', name: 'a', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
    ],
    ...overrides,
  };
}

describe('prompt cache breakpoints on translated requests', () => {
  it('marks the last tool, the system prompt and the end of the conversation so far (three of the four allowed)', () => {
    const r = request();
    expect(addCacheBreakpoints(r, { ttl: '5m' })).to.equal(3);
    expect(r.tools![0]).not.to.have.property('cache_control');
    expect(r.tools![1].cache_control).to.deep.equal({ type: 'ephemeral' });
    expect(r.system).to.deep.equal([{ type: 'text', text: LONG, cache_control: { type: 'ephemeral' } }]);
    expect((r.messages[2].content as any[])[0].cache_control).to.deep.equal({ type: 'ephemeral' });
    expect((r.messages[0].content as any[])[0]).not.to.have.property('cache_control');
  });

  it('the key group\'s 1-hour TTL is written on every breakpoint', () => {
    const r = request();
    addCacheBreakpoints(r, { ttl: '1h' });
    expect(r.tools![1].cache_control).to.deep.equal({ type: 'ephemeral', ttl: '1h' });
    expect((r.system as any[])[0].cache_control).to.deep.equal({ type: 'ephemeral', ttl: '1h' });
  });

  it('never marks a thinking block: the last markable block of the last message is marked', () => {
    const r = request({ messages: [{ role: 'user', content: LONG }, { role: 'assistant', content: [{ type: 'text', text: 'Sure' }, { type: 'thinking', thinking: 't', signature: 's' }] }] });
    addCacheBreakpoints(r, { ttl: '5m' });
    const last = r.messages[1].content as any[];
    expect(last[0].cache_control).to.deep.equal({ type: 'ephemeral' });
    expect(last[1]).not.to.have.property('cache_control');
  });

  it('a string message becomes a text block to carry the marker', () => {
    const r = request({ tools: undefined, system: undefined, messages: [{ role: 'user', content: LONG }] });
    expect(addCacheBreakpoints(r, { ttl: '5m' })).to.equal(1);
    expect(r.messages[0].content).to.deep.equal([{ type: 'text', text: LONG, cache_control: { type: 'ephemeral' } }]);
  });

  it('leaves a request alone when it already marks a block (the client manages its cache)', () => {
    const r = request({ system: [{ type: 'text', text: LONG, cache_control: { type: 'ephemeral' } }] });
    expect(addCacheBreakpoints(r, { ttl: '5m' })).to.equal(0);
    expect(r.tools![1]).not.to.have.property('cache_control');
  });

  it('marks nothing when the prompt has fewer characters than the model\'s minimum cacheable tokens', () => {
    const r = request({ system: 'short', tools: undefined });
    expect(addCacheBreakpoints(r, { ttl: '5m', minCacheableTokens: 4096 })).to.equal(0);
    expect(r.system).to.equal('short');
  });
});
