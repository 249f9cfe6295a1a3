/**
 * The native route's stream: bytes pass as they are (the first event renamed when the upstream names
 * the model differently), usage is read on the side, and a broken stream ends with an `error` event.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { createNativeRelayTransform, deltaCharacters, type NativeRelayRecord } from '../../../translators/native-relay-stream';
import { countDeltaCharacters } from '../../../translators/usage';

const start = (model: string) => `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"${model}","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}\n\n`;
const delta = (text: string) => `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"${text}"}}\n\n`;
const bytes = (records: NativeRelayRecord[]) => Buffer.concat(records.map((r) => (Buffer.isBuffer(r) ? r : Buffer.from(JSON.stringify(r)))));

describe('native relay stream', () => {
  it('passes bytes as they are, reading usage on the side', () => {
    const transform = createNativeRelayTransform(null);
    const chunk = Buffer.from(start('up') + delta('Héllo wörld'));
    expect(transform.relay(chunk)).to.deep.equal([chunk]);
    for (const text of [start('up'), delta('Héllo wörld')]) {
      const [name, data] = text.trim().split('\n');
      expect(transform.push({ event: name.slice(7), data: data.slice(6) })).to.deep.equal([]);
    }
    expect(transform.usage.input_tokens).to.equal(7);
    expect(transform.usage.output_tokens).to.be.at.least(1);
    expect(transform.streamedCharacters).to.equal('Héllo wörld'.length);
  });

  it('renames the model in the first event, whole, and keeps its other characters intact', () => {
    const transform = createNativeRelayTransform({ from: 'up', to: 'canonical' });
    const text = start('up') + delta('Ünïcödé 🌍');
    const whole = Buffer.from(text);
    // Split inside the first event: nothing goes out until it is whole.
    expect(transform.relay(whole.subarray(0, 20))).to.deep.equal([]);
    const out = bytes(transform.relay(whole.subarray(20))).toString('utf8');
    expect(out).to.equal(text.replace('"model":"up"', '"model":"canonical"'));
  });

  it('a stream that ends before message_stop, or stalls, ends with an error event', () => {
    const cut = createNativeRelayTransform(null);
    expect(cut.end()).to.deep.equal([{ type: 'error', error: { type: 'api_error', message: 'the upstream stream ended before the reply was complete' } }]);
    expect(cut.closed).to.equal(true);
    const idle = createNativeRelayTransform(null);
    expect(idle.fail('the upstream stream stalled', true)).to.deep.equal([{ type: 'error', error: { type: 'timeout_error', message: 'the upstream stream stalled' } }]);
    const complete = createNativeRelayTransform(null);
    complete.push({ event: 'message_stop', data: '{"type":"message_stop"}' });
    expect(complete.end()).to.deep.equal([]);
    expect(complete.closed).to.equal(true);
  });

  it('is closed by message_stop: the reply ends with the chunk that carried it, and nothing after it is relayed', () => {
    const transform = createNativeRelayTransform(null);
    const last = Buffer.from(delta('bye') + 'event: message_stop\ndata: {"type":"message_stop"}\n\n');
    expect(transform.relay(last)).to.deep.equal([last]);
    expect(transform.closed).to.equal(false);
    transform.push({ event: 'content_block_delta', data: delta('bye').split('\n')[1].slice(6) });
    transform.push({ event: 'message_stop', data: '{"type":"message_stop"}' });
    expect(transform.closed).to.equal(true);
    expect(transform.relay(Buffer.from(': a late comment\n\n'))).to.deep.equal([]);
    expect(transform.end()).to.deep.equal([]);
    expect(transform.fail('lost')).to.deep.equal([]);
  });

  describe('characters of a delta read off its data', () => {
    const parsed = (data: string) => {
      try {
        return countDeltaCharacters(JSON.parse(data));
      } catch {
        return 0;
      }
    };
    const deltaTypes = fc.constantFrom(['text_delta', 'text'], ['input_json_delta', 'partial_json'], ['thinking_delta', 'thinking'], ['signature_delta', 'signature'], ['citations_delta', 'text']);

    it('counts what the parsed data counts, for every text the API may stream (quotes, escapes, surrogates, non-ASCII)', () => {
      fc.assert(fc.property(fc.string({ unit: 'binary' }), fc.nat(20), deltaTypes, (text, index, [type, field]) => {
        const data = JSON.stringify({ type: 'content_block_delta', index, delta: { type, [field]: text } });
        expect(deltaCharacters(data)).to.equal(parsed(data));
      }), { numRuns: 3000 });
    });

    it('counts what the parsed data counts for any data in the layout, valid JSON or not', () => {
      const body = fc.string({ unit: fc.constantFrom('a', 'é', '"', '\\', 'u', '0', 'f', 'n', '\n', '\u2028', '}') });
      fc.assert(fc.property(body, fc.constantFrom('text_delta","text', 'thinking_delta","thinking', 'input_json_delta","partial_json'), (raw, start) => {
        const data = `{"type":"content_block_delta","index":0,"delta":{"type":"${start}":"${raw}"}}`;
        expect(deltaCharacters(data)).to.equal(parsed(data));
      }), { numRuns: 3000 });
    });
  });
});
