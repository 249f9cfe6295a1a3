import { expect } from 'chai';
import fc from 'fast-check';
import { createDeltaCharacterCounter, deltaText } from '../../../translators/delta-characters';

/** What the counter must agree with: parse the event and measure its delta text. */
function parsedCount(data: string): number {
  try {
    return deltaText((JSON.parse(data) as { delta?: unknown } | null)?.delta).length;
  } catch {
    return 0;
  }
}

const textDelta = (text: string, index = 0) => JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
const jsonDelta = (partial: string, index = 1) => JSON.stringify({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: partial } });
const thinkingDelta = (thinking: string) => JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking } });
const signatureDelta = (signature: string) => JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature } });

describe('delta character counter (native content_block_delta text, read in place)', () => {
  it('counts the text of each kind of delta (wire-formats.md §3)', () => {
    const count = createDeltaCharacterCounter();
    expect(count(textDelta('Hello'))).to.equal(5);
    expect(count(textDelta(' world'))).to.equal(6);
    expect(count(jsonDelta('{"city": "Par'))).to.equal(13);
    expect(count(jsonDelta('is"}'))).to.equal(4);
    expect(count(thinkingDelta('First, 27*400'))).to.equal(13);
    expect(count(signatureDelta('EqQBCgIYAhIM'))).to.equal(0);
  });

  it('counts escapes as the characters they stand for, including surrogate pairs', () => {
    const count = createDeltaCharacterCounter();
    count(textDelta('learn the frame'));
    expect(count(textDelta('a\nb\t"c"\\'))).to.equal(8);
    expect(count('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\\u00e9 \\ud83d\\ude00"}}')).to.equal(7);
    expect(count('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\/b"}}')).to.equal(3);
    expect(count(textDelta('👋 non-ASCII as is'))).to.equal('👋 non-ASCII as is'.length);
  });

  it('falls back to parsing for anything off the learned frame', () => {
    const count = createDeltaCharacterCounter();
    count(textDelta('frame'));
    // Other fields after the text, the same frame around a non-string, a literal that is not one.
    expect(count('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ab","x":"cd"}}')).to.equal(2);
    expect(count('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":12}}')).to.equal(0);
    expect(count('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\"}}')).to.equal(0);
    expect(count('{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\x41"}}')).to.equal(0);
    expect(count('not json')).to.equal(0);
    expect(count('null')).to.equal(0);
    // Whitespace and key order the upstream chose are learned as they are.
    const spaced = (text: string) => `{ "delta" : { "text" : ${JSON.stringify(text)} , "type": "text_delta" }, "index": 0, "type": "content_block_delta" }`;
    expect(count(spaced('one'))).to.equal(3);
    expect(count(spaced('three'))).to.equal(5);
  });

  it('agrees with parsing every event, for any sequence of deltas (property)', () => {
    const delta = fc.oneof(
      fc.string({ unit: 'binary' }).map((text) => textDelta(text)),
      fc.tuple(fc.string({ unit: 'binary' }), fc.nat(12)).map(([text, index]) => textDelta(text, index)),
      fc.string().map((partial) => jsonDelta(partial)),
      fc.string({ unit: 'grapheme' }).map((thinking) => thinkingDelta(thinking)),
      fc.string().map((signature) => signatureDelta(signature)),
      // Escapes written differently from JSON.stringify (\u for every character, \/ for /).
      fc.string().map((text) => textDelta(text).replace(/"text":"(.*)"}}$/, (_m, body: string) =>
        `"text":"${body.replace(/\//g, '\\/').replace(/[a-z]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)}"}}`)),
      fc.string(),
    );
    fc.assert(
      fc.property(fc.array(delta, { maxLength: 30 }), (events) => {
        const count = createDeltaCharacterCounter();
        for (const data of events) expect(count(data), data).to.equal(parsedCount(data));
      }),
      { numRuns: 500 },
    );
  });
});
