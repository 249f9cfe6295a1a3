/**
 * The tests' fake upstreams judge requests by spec/helpers/api-rules.ts, written from the provider's
 * pages. These cases pin the content-block and sampling rules: a fake that accepted what the real API
 * refuses would let a translator that sends it pass.
 */
import { expect } from 'chai';
import { contentBlockRefusal, refusal } from '../helpers/api-rules';

const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: unknown) => ({ role: 'assistant', content });
const base = { model: 'model-sonnet-4.6', max_tokens: 4096 };
const NONE: ReadonlySet<string> = new Set();

describe('fake upstream rules (spec/helpers/api-rules.ts)', () => {
  describe('top_p with thinking', () => {
    const thinking = { ...base, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [user('hi')] };

    it('refuses top_p below 0.95 when thinking is on, and accepts 0.95 to 1', () => {
      expect(refusal({ ...thinking, top_p: 0.9 }, NONE)).to.match(/top_p.*0\.95.*thinking/);
      expect(refusal({ ...thinking, top_p: 0.95 }, NONE)).to.equal(null);
      expect(refusal({ ...thinking, top_p: 1 }, NONE)).to.equal(null);
    });

    it('accepts any top_p when thinking is off', () => {
      expect(refusal({ ...base, top_p: 0.5, messages: [user('hi')] }, NONE)).to.equal(null);
    });
  });

  describe('content blocks', () => {
    it('refuses an empty text block in a message or the system prompt', () => {
      expect(contentBlockRefusal({ messages: [user([{ type: 'text', text: '' }, { type: 'text', text: 'hi' }])] }))
        .to.equal('messages: text content blocks must be non-empty');
      expect(contentBlockRefusal({ system: [{ type: 'text', text: '' }], messages: [user('hi')] }))
        .to.equal('system: text content blocks must be non-empty');
    });

    it('answers cache_control on an empty text block with its own message, naming the block', () => {
      expect(contentBlockRefusal({ messages: [user('a'), assistant('b'), user([{ type: 'text', text: 'c' }, { type: 'text', text: '', cache_control: { type: 'ephemeral' } }])] }))
        .to.equal('messages.2.content.1.text: cache_control cannot be set for empty text blocks');
    });

    it('refuses cache_control on a thinking or redacted thinking block', () => {
      const thinking = { type: 'thinking', thinking: 't', signature: 's', cache_control: { type: 'ephemeral' } };
      expect(contentBlockRefusal({ messages: [user('a'), assistant([thinking, { type: 'text', text: 'b' }]), user('c')] }))
        .to.equal('messages.1.content.0.thinking.cache_control: Extra inputs are not permitted');
      expect(contentBlockRefusal({ messages: [user('a'), assistant([{ type: 'redacted_thinking', data: 'x', cache_control: { type: 'ephemeral' } }]), user('c')] }))
        .to.match(/^messages\.1\.content\.0\.redacted_thinking\.cache_control/);
    });

    it('refuses a message with no content, but for a final assistant message (a prefill)', () => {
      expect(contentBlockRefusal({ messages: [user(''), assistant('b'), user('c')] }))
        .to.equal('messages.0: all messages must have non-empty content except for the optional final assistant message');
      expect(contentBlockRefusal({ messages: [user('a'), assistant([]), user('c')] })).to.match(/^messages\.1: all messages must have non-empty content/);
      expect(contentBlockRefusal({ messages: [user('a'), assistant('')] })).to.equal(null);
      expect(contentBlockRefusal({ messages: [user('a'), assistant([])] })).to.equal(null);
    });

    it('accepts non-empty text, whitespace included, and blocks of other types', () => {
      expect(contentBlockRefusal({
        system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
        messages: [user([{ type: 'text', text: ' ' }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }])],
      })).to.equal(null);
    });
  });
});
