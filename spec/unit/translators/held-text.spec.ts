import { expect } from 'chai';
import fc from 'fast-check';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createHeldText } from '../../../translators/held-text';
import { createResponsesStreamTransform } from '../../../translators/responses-stream';
import type { ResponsesStreamRecord } from '../../../translators/responses-types';
import { fixtureOptions } from '../../helpers/responses-fixtures';

// A full collection before each reading, so that other tests' buffers freed meanwhile do not count.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** The pieces appended to a held text, read back; the plain string they join to is its oracle. */
function heldBack(pieces: string[]): string {
  const held = createHeldText();
  for (const piece of pieces) held.append(piece);
  return held.toString();
}

describe('held text (a streamed reply\'s text so far, kept compactly)', () => {
  // Pieces long enough to fill gathered strings and blocks, with any UTF-16 (split pairs, lone surrogates).
  const piece = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'binary', minLength: 1000, maxLength: 5000 }),
    fc.constantFrom('\ud83d', '\ude00', '😀', 'é', 'x'.repeat(4095)),
  );

  it('reads back the pieces joined, whatever they hold and however they are cut', () => {
    fc.assert(fc.property(fc.array(piece, { maxLength: 60 }), (pieces) => {
      expect(heldBack(pieces) === pieces.join(''), 'the pieces joined').to.equal(true);
    }), { numRuns: 300 });
  });

  it('reads back the pieces joined past 256 KiB, where its blocks are kept deflated', () => {
    // The generated pieces twelve times over: some 300 KB to 2 MB of UTF-8.
    fc.assert(fc.property(fc.array(piece, { minLength: 30, maxLength: 60 }), (some) => {
      const pieces = Array.from({ length: 12 }, () => some).flat();
      expect(heldBack(pieces) === pieces.join(''), 'the pieces joined').to.equal(true);
    }), { numRuns: 40 });
  });

  it('keeps a surrogate pair split at the edge of a gathered string, and a lone surrogate, as they came', () => {
    const pair = ['a'.repeat(4095) + '\ud83d', '\ude00' + 'b'.repeat(70_000)];
    expect(heldBack(pair)).to.equal(pair.join(''));
    const lone = ['c'.repeat(5000) + '\udfff', 'd'.repeat(5000) + '\ud800', 'e'.repeat(5000)];
    expect(heldBack(lone)).to.equal(lone.join(''));
  });

  it('holds a megabyte of text in about a megabyte of blocks, not in the chunks its pieces were cut from', () => {
    collectGarbage();
    const before = process.memoryUsage().arrayBuffers;
    const held = createHeldText();
    // Each piece a slice of its own 64 KiB chunk, as the SSE parser's deltas are.
    for (let i = 0; i < 5000; i++) held.append(`${'y'.repeat(65_536)}${i}`.slice(65_536 - 200));
    collectGarbage();
    const grown = process.memoryUsage().arrayBuffers - before;
    // At most about a megabyte (the chunks would be 5000 x 64 KiB = 312 MiB). No lower bound: in the
    // whole suite other tests' buffers are freed meanwhile, so the growth read here can come out smaller.
    expect(grown / 2 ** 20, 'MiB of blocks').to.be.below(1.1);
    expect(held.toString().length).to.equal(5000 * 200 + [...Array(5000).keys()].join('').length);
  });

  it('reads back a text of megabytes (its later blocks kept deflated) as its pieces joined, and holds varied text past 256 KiB deflated', () => {
    // Random words of letters and multi-byte characters, each piece cut anywhere (a pair may be split).
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    // By code point: a surrogate pair picked half would be a lone surrogate, kept as a string, not in a block.
    const alphabet = [...'abcdefghijklmnopqrstuvwxyz     éü€😀'];
    const pieces: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      let piece = '';
      for (let j = 0, n = 1 + Math.floor(next() * 300); j < n; j++) piece += alphabet[Math.floor(next() * alphabet.length)] ?? '';
      pieces.push(piece);
    }
    const joined = pieces.join('');
    collectGarbage();
    const before = process.memoryUsage().arrayBuffers;
    const held = createHeldText();
    for (const piece of pieces) held.append(piece);
    collectGarbage();
    const grown = process.memoryUsage().arrayBuffers - before;
    const bytes = Buffer.byteLength(joined);
    expect(bytes / 2 ** 20, 'MiB of text').to.be.above(3);
    // 256 KiB as it is, the rest deflated: random letters come to some 60 % of their bytes.
    expect(grown, 'bytes held').to.be.below(256 * 1024 + 0.75 * (bytes - 256 * 1024));
    expect(held.toString() === joined, 'the pieces joined').to.equal(true);
  });

  it('gives the Responses stream\'s .done events and final response the whole text of a long reply', () => {
    const transform = createResponsesStreamTransform(fixtureOptions());
    const event = (name: string, data: unknown) => ({ event: name, data: JSON.stringify(data) });
    const records: ResponsesStreamRecord[] = [];
    const words = ['Lorem ', 'ipsum ', 'dolor ', 'sït ', '😀 '];
    let text = '';
    records.push(...transform.push(event('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], usage: { input_tokens: 1, output_tokens: 1 } } })));
    records.push(...transform.push(event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })));
    for (let i = 0; i < 30_000; i++) {
      text += words[i % 5];
      records.push(...transform.push(event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: words[i % 5] } })));
    }
    records.push(...transform.push(event('content_block_stop', { type: 'content_block_stop', index: 0 })));
    records.push(...transform.push(event('message_stop', { type: 'message_stop' })));
    const done = records.find((record) => record.type === 'response.output_text.done') as unknown as { text: string };
    expect(done.text === text, 'output_text.done carries the whole text').to.equal(true);
    const completed = records.at(-1) as unknown as { type: string; response: { output: Array<{ content: Array<{ text: string }> }> } };
    expect(completed.type).to.equal('response.completed');
    expect(completed.response.output[0].content[0].text === text, 'response.completed carries it').to.equal(true);
  });
});
