/**
 * Characters of streamed text in native `content_block_delta` events, read without parsing every
 * event (wire-formats.md §3: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
 * likewise `partial_json` of `input_json_delta` and `thinking` of `thinking_delta`).
 *
 * The native proxy passes a stream's bytes through unchanged, but counts the characters it has
 * passed on, so a stream cut before its final usage is billed for what the client received. Parsing
 * every delta's JSON for that cost about 1 µs per event (bench: a 200-delta stream took 520 µs of
 * CPU, 190 µs of it in those parses). Upstreams write every delta of a content block with the same
 * frame around the text, so the counter learns that frame from one parsed delta and then reads the
 * text of the following ones in place: the JSON string literal between the known prefix and suffix,
 * its length less what its escapes add. Any event that does not fit the frame exactly (another
 * block, another delta type, other fields, an odd literal) is parsed as before and its frame learned.
 */

/** The fields of a content_block_delta's `delta` that carry its text, in the order they are read. */
const TEXT_FIELDS = ['text', 'partial_json', 'thinking'] as const;

/** A text before a value that ends with the field's key. */
const KEY_BEFORE = { text: /"text"\s*:\s*$/, partial_json: /"partial_json"\s*:\s*$/, thinking: /"thinking"\s*:\s*$/ } as const;

/** Text carried by a content_block_delta's `delta`, whatever its kind ('' for none). */
export function deltaText(delta: unknown): string {
  const field = textFieldOf(delta);
  return field === undefined ? '' : ((delta as Record<string, string>)[field]);
}

/** Which of TEXT_FIELDS the delta's text is read from (the first present), if it is a string. */
function textFieldOf(delta: unknown): (typeof TEXT_FIELDS)[number] | undefined {
  if (typeof delta !== 'object' || delta === null) return undefined;
  for (const field of TEXT_FIELDS) {
    const value = (delta as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    return typeof value === 'string' ? field : undefined;
  }
  return undefined;
}

/**
 * Counter of the text characters (UTF-16 code units, as `string.length`) in the `data` of native
 * content_block_delta events, one counter per stream. Counts what parsing each event and reading
 * `deltaText(event.delta).length` would, for events that carry their text in one place (a property
 * test holds it to that, escapes and odd events included).
 * @returns `count(data)`: the characters of that event's delta text; 0 for data that is not JSON or carries no text. Never throws.
 */
export function createDeltaCharacterCounter(): (data: string) => number {
  let prefix: string | null = null;
  let suffix = '';
  return (data) => {
    // `lastIndexOf(prefix, 0) === 0` is `startsWith(prefix)`: on Node 20, startsWith with a search
    // string that is not a constant took 280 to 340 ns per call here, against 50 ns.
    if (prefix !== null && data.length >= prefix.length + suffix.length + 2 && data.lastIndexOf(prefix, 0) === 0 && data.endsWith(suffix)) {
      const length = literalLength(data, prefix.length, data.length - suffix.length);
      if (length >= 0) return length;
    }
    let parsed: { delta?: unknown } | null;
    try {
      parsed = JSON.parse(data) as { delta?: unknown } | null;
    } catch {
      return 0;
    }
    const delta = parsed?.delta;
    const field = textFieldOf(delta);
    if (field === undefined) return 0;
    const text = (delta as Record<string, string>)[field];
    // The frame: what surrounds the text's literal, taken only where that literal occurs once and
    // right after its own key (so it is the value read above, written as JSON.stringify writes it).
    const literal = JSON.stringify(text);
    const at = data.indexOf(literal);
    if (at !== -1 && data.indexOf(literal, at + 1) === -1 && KEY_BEFORE[field].test(data.slice(0, at))) {
      prefix = data.slice(0, at);
      suffix = data.slice(at + literal.length);
    }
    return text.length;
  };
}

/**
 * Decoded length of `data[start, end)` if that span is exactly one JSON string literal (quotes
 * included), else -1. An escape stands for one UTF-16 code unit: `\x` for the characters of
 * `"\/bfnrt`, `\uXXXX` with four hex digits.
 */
function literalLength(data: string, start: number, end: number): number {
  const close = end - 1;
  if (data.charCodeAt(start) !== QUOTE || data.charCodeAt(close) !== QUOTE) return -1;
  let length = 0;
  let i = start + 1;
  while (i < close) {
    const c = data.charCodeAt(i);
    if (c === QUOTE || c < 0x20) return -1;
    if (c !== BACKSLASH) {
      i += 1;
    } else if (data.charCodeAt(i + 1) === LOWER_U) {
      if (!/^[0-9a-fA-F]{4}$/.test(data.slice(i + 2, i + 6))) return -1;
      i += 6;
    } else if (SIMPLE_ESCAPES.includes(data[i + 1])) {
      i += 2;
    } else {
      return -1;
    }
    length++;
  }
  // An escape that ran over the closing quote: the literal does not end there.
  return i === close ? length : -1;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LOWER_U = 0x75;
const SIMPLE_ESCAPES = '"\\/bfnrt';
