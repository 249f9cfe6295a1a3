/**
 * Duplicate member names in JSON text. `JSON.parse` keeps the last value of a repeated name; another
 * parser may keep the first (RFC 8259 section 4 leaves it to the implementation). A body the gateway
 * judged by its parse must not reach an upstream that reads it differently, so the native proxy
 * forwards its own serialisation of such a body instead of the bytes received.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COLON = 0x3a;

/** Index of the quote closing the string whose opening quote is at `start` (-1 when unterminated). */
function stringEnd(text: string, start: number): number {
  let at = start;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at === -1) return -1;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * True when some object in `text` (valid JSON, as UTF-8) names a member twice, at any depth. Names are
 * compared after unescaping (`"model"` and `"mod\u0065l"` are the same name). Linear in the text.
 *
 * Kept for speed: the bytes are read as a one-byte string (each character one byte, so equal names
 * are equal strings), whose `indexOf` skips a string's contents without a call into C++ per string
 * as a Buffer's does, and each depth keeps one reused array of the names seen: a 126 KB agent
 * request went from about 160 to 55 µs (RESULTS.md).
 */
export function hasDuplicateKeys(bytes: Buffer): boolean {
  const text = bytes.toString('latin1');
  // Per open container, by depth: the names seen so far in an object (arrays reused), and whether it is one.
  const names: string[][] = [];
  const isObject: boolean[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const end = stringEnd(text, i);
      if (end === -1) return false;
      if (depth > 0 && isObject[depth - 1]) {
        // A string in an object followed by a colon is a member name.
        let next = end + 1;
        let after = text.charCodeAt(next);
        while (after === 0x20 || after === 0x0a || after === 0x0d || after === 0x09) after = text.charCodeAt(++next);
        if (after === COLON) {
          const raw = text.slice(i + 1, end);
          // An escaped name, decoded, as the one-byte string of its UTF-8 bytes (what an unescaped one is).
          const name = raw.includes('\\') ? Buffer.from(JSON.parse(`"${bytes.toString('utf8', i + 1, end)}"`) as string).toString('latin1') : raw;
          const seen = names[depth - 1];
          if (seen.includes(name)) return true;
          seen.push(name);
        }
      }
      i = end;
    } else if (code === OPEN_OBJECT || code === OPEN_ARRAY) {
      if (names.length <= depth) names.push([]);
      else names[depth].length = 0;
      isObject[depth++] = code === OPEN_OBJECT;
    } else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}
