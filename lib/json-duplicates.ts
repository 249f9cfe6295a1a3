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
function stringEnd(text: Buffer, start: number): number {
  let at = start;
  for (;;) {
    at = text.indexOf(QUOTE, at + 1);
    if (at === -1) return -1;
    let backslashes = 0;
    while (text[at - 1 - backslashes] === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * True when some object in `text` (valid JSON, as UTF-8) names a member twice, at any depth. Names are
 * compared after unescaping (`"model"` and `"mod\u0065l"` are the same name). Linear in the text; the
 * contents of strings are skipped with `indexOf`.
 */
export function hasDuplicateKeys(text: Buffer): boolean {
  // One entry per open container: the names seen so far for an object, null for an array.
  const open: Array<Set<string> | null> = [];
  for (let i = 0; i < text.length; i++) {
    const byte = text[i];
    if (byte === QUOTE) {
      const end = stringEnd(text, i);
      if (end === -1) return false;
      const names = open[open.length - 1];
      // A string in an object followed by a colon is a member name.
      let next = end + 1;
      while (next < text.length && (text[next] === 0x20 || text[next] === 0x0a || text[next] === 0x0d || text[next] === 0x09)) next++;
      if (names && text[next] === COLON) {
        const raw = text.toString('utf8', i + 1, end);
        const name = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (names.has(name)) return true;
        names.add(name);
      }
      i = end;
    } else if (byte === OPEN_OBJECT) {
      open.push(new Set());
    } else if (byte === OPEN_ARRAY) {
      open.push(null);
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      open.pop();
    }
  }
  return false;
}
