import v8 from 'node:v8';
import vm from 'node:vm';
import { expect } from 'chai';
import fc from 'fast-check';
import { createDeltaCharacterCounter, createDeltaReader, deltaText } from '../../../translators/delta-characters';

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

  describe('canonical reader (the chat translator copies the literal)', () => {
    it('finds in place only literals written as JSON.stringify writes their text', () => {
      const read = createDeltaReader({ canonical: true });
      expect(read(textDelta('learn the frame')).kind).to.equal('parsed');
      const inPlace = (data: string) => {
        const found = read(data);
        return found.kind === 'in-place' ? data.slice(found.start, found.end) : found.kind;
      };
      expect(inPlace(textDelta('a\nb\t"c"\\ \u0001 \u001f / 👋'))).to.equal(JSON.stringify('a\nb\t"c"\\ \u0001 \u001f / 👋'));
      const framed = (literal: string) => `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${literal}}}`;
      expect(inPlace(framed('"a\\/b"'))).to.equal('parsed');
      expect(inPlace(framed('"caf\\u00e9"'))).to.equal('parsed');
      expect(inPlace(framed('"\\ud83d\\ude00"'))).to.equal('parsed');
      expect(inPlace(framed('"\\u000a"'))).to.equal('parsed');
      expect(inPlace(framed('"\\u001F"'))).to.equal('parsed');
      expect(inPlace(framed('"\\u001f"'))).to.equal('"\\u001f"');
      expect(inPlace(framed('"\ud800"'))).to.equal('parsed');
      expect(read(framed('"\\x"')).kind).to.equal('unreadable');
    });

    it('gives the frame of the event it stands for, and its text serialized (property)', () => {
      // Runs of deltas of one block (as upstreams send them), mixed with odd and non-canonical events.
      const slashes = (data: string) => data.replace(/"text":"(.*)"}}$/, (_m, body: string) => `"text":"${body.replace(/\//g, '\\/')}"}}`);
      const uEscapes = (data: string) => data.replace(/"text":"(.*)"}}$/, (_m, body: string) =>
        `"text":"${body.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"}}`);
      const run = fc.oneof(
        fc.tuple(fc.nat(3), fc.array(fc.string({ unit: 'binary' }), { maxLength: 8 })).map(([index, texts]) => texts.map((text) => textDelta(text, index))),
        fc.tuple(fc.nat(3), fc.array(fc.string(), { maxLength: 8 })).map(([index, parts]) => parts.map((part) => jsonDelta(part, index))),
        fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 4 }).map((texts) => texts.map(thinkingDelta)),
        fc.array(fc.string(), { maxLength: 4 }).map((texts) => texts.map((text) => slashes(textDelta(text)))),
        fc.array(fc.string({ unit: 'binary' }), { maxLength: 4 }).map((texts) => texts.map((text) => uEscapes(textDelta(text)))),
        fc.string().map((data) => [data]),
      );
      const events = fc.array(run, { maxLength: 8 }).map((runs) => runs.flat());
      let inPlace = 0;
      fc.assert(
        fc.property(events, (datas) => {
          const read = createDeltaReader({ canonical: true });
          for (const data of datas) {
            const found = read(data);
            let parsed: any;
            try {
              parsed = JSON.parse(data);
            } catch {
              expect(found.kind, data).to.equal('unreadable');
              continue;
            }
            if (found.kind === 'parsed') {
              expect(found.event).to.deep.equal(parsed);
              continue;
            }
            expect(found.kind, data).to.equal('in-place');
            if (found.kind !== 'in-place') continue;
            inPlace++;
            const text = parsed.delta[found.frame.field];
            expect(deltaText(parsed.delta), data).to.equal(text);
            expect(data.slice(found.start, found.end), data).to.equal(JSON.stringify(text));
            expect(found.length).to.equal(text.length);
            expect(found.frame.index).to.equal(parsed.index);
            expect(found.frame.deltaType).to.equal(parsed.delta.type);
          }
        }),
        { numRuns: 500 },
      );
      expect(inPlace, 'deltas found in place').to.be.greaterThan(500);
    });
  });

  it('keeps nothing of the upstream chunk its frame was learned from alive', () => {
    // An event's data is a slice of the decoded upstream chunk, and V8 makes a slice a view into its
    // string: a frame kept as slices kept the whole chunk alive for as long as the reader lived.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const heapUsed = () => {
      gc();
      return v8.getHeapStatistics().used_heap_size;
    };
    const read = createDeltaReader({ canonical: true });
    const before = heapUsed();
    (() => {
      const event = textDelta('Hello');
      const chunk = Buffer.from(`${event}\n${'x'.repeat(8 * 1024 * 1024)}`).toString();
      expect(read(chunk.slice(0, event.length)).kind).to.equal('parsed');
    })();
    const kept = heapUsed() - before;
    expect(read(textDelta(' world')).kind, 'the frame was learned').to.equal('in-place');
    expect(kept, 'bytes kept after the 8 MB chunk was dropped').to.be.below(1024 * 1024);
  });
});
