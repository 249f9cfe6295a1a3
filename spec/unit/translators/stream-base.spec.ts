/**
 * The stream base (translators/stream-base.ts), through the three transforms that extend it: the same
 * skipping of unknown events, the same output-token floor, the same close.
 */
import { expect } from 'chai';
import { createNativeRelayTransform } from '../../../translators/native-relay-stream';
import { createChatStreamTransform } from '../../../translators/native-to-chat-stream';
import { createResponsesStreamTransform } from '../../../translators/responses-stream';
import type { StreamTransform } from '../../../translators/stream-transform';
import { fixtureOptions } from '../../helpers/responses-fixtures';

const TRANSFORMS: Array<[string, () => StreamTransform<unknown>]> = [
  ['native relay', () => createNativeRelayTransform(null)],
  ['chat', () => createChatStreamTransform({ model: 'model-sonnet-4.6', created: 1_750_000_000, includeUsage: false })],
  ['Responses', () => createResponsesStreamTransform(fixtureOptions())],
];

const event = (name: string, data: unknown) => ({ event: name, data: JSON.stringify(data) });
const messageStart = event('message_start', { type: 'message_start', message: { id: 'msg_1', content: [], usage: { input_tokens: 7, output_tokens: 1 } } });
const textStart = event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
const textDelta = (text: string) => event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });

describe('stream base (native relay, chat and Responses transforms)', () => {
  for (const [name, create] of TRANSFORMS) {
    it(`${name}: an event named after a member of every object is skipped like any unknown type`, () => {
      const transform = create();
      transform.push(messageStart);
      for (const odd of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', 'ping']) {
        expect(transform.push(event(odd, { type: odd })), odd).to.deep.equal([]);
      }
      expect(transform.closed).to.equal(false);
    });

    it(`${name}: output tokens are at least what was streamed until the final usage, then the upstream's figure`, () => {
      const transform = create();
      transform.push(messageStart);
      transform.push(textStart);
      transform.push(textDelta('x'.repeat(400)));
      transform.floorOutputTokens!();
      expect(transform.streamedCharacters).to.equal(400);
      expect(transform.usage.output_tokens).to.equal(100);
      transform.push(event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 90 } }));
      transform.floorOutputTokens!();
      expect(transform.usage.output_tokens).to.equal(90);
      expect(transform.stopReason).to.equal('end_turn');
    });

    it(`${name}: a stream that ends short or is lost closes once, and nothing follows`, () => {
      const transform = create();
      transform.push(messageStart);
      expect(transform.end()).to.have.length.greaterThan(0);
      expect(transform.closed).to.equal(true);
      expect(transform.fail('lost', true)).to.deep.equal([]);
      expect(transform.end()).to.deep.equal([]);
      expect(transform.push(textDelta('late'))).to.deep.equal([]);
    });
  }

  it('an unreadable event breaks a translated stream, but not the relay (its bytes went out as they came)', () => {
    const unreadable = { event: 'message_delta', data: '{"type":' };
    const relay = createNativeRelayTransform(null);
    relay.push(messageStart);
    expect(relay.push(unreadable)).to.deep.equal([]);
    expect(relay.closed).to.equal(false);
    for (const [name, create] of TRANSFORMS.slice(1)) {
      const transform = create();
      transform.push(messageStart);
      expect(transform.push(unreadable), name).to.have.length.greaterThan(0);
      expect(transform.closed, name).to.equal(true);
      expect(transform.error?.status, name).to.equal(502);
    }
  });
});
