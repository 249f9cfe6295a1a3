/**
 * A long text built from many small pieces (a streamed reply's deltas) and read once at the end, held
 * compactly. Kept for memory: a delta is a V8 "sliced" string that keeps the upstream chunk it was
 * read from alive, and a string grown with `+=` is a tree of every piece: eight stalled 80 MB Responses
 * streams grew the gateway by 28 MB, 22 MB with these blocks, 16 MB of it their text
 * (spec/integration/stream-backpressure.spec.ts, bench/RESULTS.md). Here the pieces are gathered in a
 * short string (TAIL_CHARS), then copied as UTF-8 into 64 KiB blocks. A text under TAIL_CHARS (most
 * replies) stays the plain string it was; a gathered string that is not well-formed UTF-16 (a lone
 * surrogate, which UTF-8 cannot hold) is kept as a string, so the text read back is always the
 * pieces joined. Past PLAIN_BYTES (a reply of some 60k tokens; real replies rarely get there), each
 * filled block is kept deflated: a stalled reader's stream holds what its kernel send queue took (up to
 * `tcp_wmem`'s 4 MiB a socket) and its final events must repeat it; deflated, eight such streams of
 * random letters (less compressible than prose) grew the gateway by 18 MB instead of 21, their text
 * 11 MB instead of 16 (stream-backpressure.spec.ts run alone).
 *
 * Pure; no I/O (zlib's synchronous calls).
 */
import zlib from 'node:zlib';

/** Characters gathered as a string before they are copied into a block. */
const TAIL_CHARS = 4096;
/** Bytes of one block (a longer gathered string gets a block of its own size). */
const BLOCK_BYTES = 64 * 1024;
/** UTF-8 bytes kept as they are; each block filled after them is deflated (memory, not speed: level 1). */
const PLAIN_BYTES = 256 * 1024;

/** A filled block's UTF-8 bytes, deflated (raw deflate, RFC 1951). */
class DeflatedBlock {
  constructor(readonly bytes: Buffer) {}
  toString(): string {
    return zlib.inflateRawSync(this.bytes).toString('utf8');
  }
}

export interface HeldText {
  /** Add `piece` at the end. */
  append(piece: string): void;
  /** The whole text: every piece appended, joined. */
  toString(): string;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
/** A surrogate without its pair (`String.prototype.isWellFormed`, not in this build's ES2022 lib). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function createHeldText(): HeldText {
  /** The filled parts, in order: UTF-8 bytes (deflated past PLAIN_BYTES), or a string UTF-8 cannot hold. */
  const parts: Array<Buffer | DeflatedBlock | string> = [];
  let block: Buffer | undefined;
  let used = 0;
  /** UTF-8 bytes in the parts kept as they are. */
  let plain = 0;
  let tail = '';
  const closeBlock = () => {
    if (block && used > 0) {
      const bytes = block.subarray(0, used);
      if (plain + used > PLAIN_BYTES) parts.push(new DeflatedBlock(zlib.deflateRawSync(bytes, { level: 1 })));
      else {
        // A block cut short (by a string UTF-8 cannot hold) is copied, so it keeps no unused bytes alive.
        parts.push(used < block.length / 2 ? Buffer.from(bytes) : bytes);
        plain += used;
      }
    }
    block = undefined;
    used = 0;
  };
  const store = (text: string) => {
    if (LONE_SURROGATE.test(text)) {
      closeBlock();
      parts.push(text);
      return;
    }
    const bytes = Buffer.byteLength(text, 'utf8');
    if (!block || used + bytes > block.length) {
      closeBlock();
      block = Buffer.allocUnsafeSlow(Math.max(BLOCK_BYTES, bytes));
    }
    used += block.write(text, used, 'utf8');
  };
  return {
    append(piece) {
      tail += piece;
      // A surrogate pair split across pieces is stored whole, with the piece that completes it.
      if (tail.length < TAIL_CHARS || isHighSurrogate(tail.charCodeAt(tail.length - 1))) return;
      store(tail);
      tail = '';
    },
    toString() {
      if (parts.length === 0 && !block) return tail;
      const texts = parts.map((part) => (typeof part === 'string' ? part : part.toString()));
      if (block) texts.push(block.toString('utf8', 0, used));
      texts.push(tail);
      return texts.join('');
    },
  };
}
