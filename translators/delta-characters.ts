/**
 * Streamed text in native `content_block_delta` events, read without parsing every event
 * (wire-formats.md §3: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
 * likewise `partial_json` of `input_json_delta` and `thinking` of `thinking_delta`).
 *
 * Two users. The native proxy passes a stream's bytes through unchanged, but counts the characters it
 * has passed on, so a stream cut before its final usage is billed for what the client received. The
 * chat stream translator copies each delta's text into a chat-completions chunk. Parsing every delta's
 * JSON for that cost about 1 µs per event (bench: a 200-delta native stream took 520 µs of CPU, 190 µs
 * of it in those parses). Upstreams write every delta of a content block with the same frame around
 * the text, so the reader learns that frame from one parsed delta and then finds the text of the
 * following ones in place: the JSON string literal between the known prefix and suffix. Any event that
 * does not fit the frame exactly (another block, another delta type, other fields, an odd literal) is
 * parsed as before and its frame learned.
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

/** Where a delta's text was found in place: the frame it fits, learned from an earlier parsed event. */
export interface DeltaFrame {
  /** `index` of the event the frame was learned from (so of this one: the frame includes it). */
  readonly index: unknown;
  /** `delta.type` of that event (likewise this one's). */
  readonly deltaType: unknown;
  /** The field of `delta` the text is read from. */
  readonly field: (typeof TEXT_FIELDS)[number];
}

/** What a delta reader found in one event's `data`. */
export type DeltaRead =
  /** The text's JSON string literal is `data.slice(start, end)` (quotes included); `length` is the decoded text's length. */
  | { readonly kind: 'in-place'; readonly start: number; readonly end: number; readonly length: number; readonly frame: DeltaFrame }
  /** Off the frame: the parsed data, whatever its shape. */
  | { readonly kind: 'parsed'; readonly event: unknown }
  /** The data is not JSON. */
  | { readonly kind: 'unreadable' };

export interface DeltaReaderOptions {
  /**
   * Find in place only literals written exactly as `JSON.stringify` writes their decoded text, so that
   * copying the literal into a re-serialized record gives the same bytes as serializing the text (the
   * chat translator). Other literals (`\/`, `\u00e9`, escaped surrogate pairs, ...) are parsed. Default false.
   */
  canonical?: boolean;
}

/**
 * A reader of native content_block_delta `data`, one per stream (it learns the frame of each block's
 * deltas). An in-place result stands for what parsing the data would give: an event whose `index` and
 * `delta.type` are the frame's, and whose `delta[frame.field]` is the literal's text (a property test
 * holds it to that, escapes and odd events included). The in-place result is one object per reader,
 * overwritten by the next call (most events are read in place: nothing is allocated for them).
 * Never throws.
 */
export function createDeltaReader(options: DeltaReaderOptions = {}): (data: string) => DeltaRead {
  const canonical = options.canonical ?? false;
  let prefix: string | null = null;
  let suffix = '';
  let frame: DeltaFrame | undefined;
  const inPlace: { kind: 'in-place'; start: number; end: number; length: number; frame: DeltaFrame } = {
    kind: 'in-place', start: 0, end: 0, length: 0, frame: { index: undefined, deltaType: undefined, field: 'text' },
  };
  return (data) => {
    // `lastIndexOf(prefix, 0) === 0` is `startsWith(prefix)`: on Node 20, startsWith with a search
    // string that is not a constant took 280 to 340 ns per call here, against 50 ns.
    if (prefix !== null && data.length >= prefix.length + suffix.length + 2 && data.lastIndexOf(prefix, 0) === 0 && data.endsWith(suffix)) {
      const start = prefix.length;
      const end = data.length - suffix.length;
      const length = literalLength(data, start, end, canonical);
      if (length >= 0) {
        inPlace.start = start;
        inPlace.end = end;
        inPlace.length = length;
        inPlace.frame = frame!;
        return inPlace;
      }
    }
    let parsed: { index?: unknown; delta?: unknown } | null;
    try {
      parsed = JSON.parse(data) as { index?: unknown; delta?: unknown } | null;
    } catch {
      return { kind: 'unreadable' };
    }
    const delta = parsed?.delta;
    const field = textFieldOf(delta);
    if (field !== undefined) {
      // The frame: what surrounds the text's literal, taken only where that literal occurs once and
      // right after its own key (so it is the value read above, written as JSON.stringify writes it).
      const literal = JSON.stringify((delta as Record<string, string>)[field]);
      const at = data.indexOf(literal);
      const before = at !== -1 && data.indexOf(literal, at + 1) === -1 ? detached(data.slice(0, at)) : null;
      if (before !== null && KEY_BEFORE[field].test(before)) {
        prefix = before;
        suffix = detached(data.slice(at + literal.length));
        frame = { index: parsed!.index, deltaType: (delta as { type?: unknown }).type, field };
      }
    }
    return { kind: 'parsed', event: parsed };
  };
}

/**
 * A copy of `text` that shares no memory with the string it was cut from. V8 makes a slice of a long
 * string a view into that string, so a frame kept as slices of one event's `data` kept the whole
 * decoded upstream chunk that data was cut from alive, for as long as the reader lived. In the bench,
 * where the upstream sends a reply in one burst, that was every 200-delta chat stream's whole reply
 * (about 28 KB): each outlived two young-generation collections and was copied to the old generation,
 * against about 4 KB per request with copies (bench/RESULTS.md, phase 6). The key test runs on the
 * copy too: a regular expression keeps its last subject until it next runs. Once per learned frame.
 */
function detached(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}

/**
 * Counter of the text characters (UTF-16 code units, as `string.length`) in the `data` of native
 * content_block_delta events, one counter per stream: what parsing each event and reading
 * `deltaText(event.delta).length` gives.
 * @returns `count(data)`: the characters of that event's delta text; 0 for data that is not JSON or carries no text. Never throws.
 */
export function createDeltaCharacterCounter(): (data: string) => number {
  const read = createDeltaReader();
  return (data) => {
    const found = read(data);
    if (found.kind === 'in-place') return found.length;
    if (found.kind === 'unreadable') return 0;
    return deltaText((found.event as { delta?: unknown } | null)?.delta).length;
  };
}

/**
 * Decoded length of `data[start, end)` if that span is exactly one JSON string literal (quotes
 * included), else -1. An escape stands for one UTF-16 code unit: `\x` for the characters of
 * `"\/bfnrt`, `\uXXXX` with four hex digits. With `canonical`, also -1 unless the literal is what
 * `JSON.stringify` writes for its text: the escapes `\"` `\\` `\b` `\f` `\n` `\r` `\t`, `\u00xx` (lowercase)
 * for the other control characters, every other character as itself, surrogates only in pairs.
 */
function literalLength(data: string, start: number, end: number, canonical: boolean): number {
  const close = end - 1;
  if (data.charCodeAt(start) !== QUOTE || data.charCodeAt(close) !== QUOTE) return -1;
  let length = 0;
  let i = start + 1;
  while (i < close) {
    const c = data.charCodeAt(i);
    if (c === QUOTE || c < 0x20) return -1;
    if (c !== BACKSLASH) {
      // JSON.stringify escapes a lone surrogate; a pair it writes as itself (two code units).
      if (canonical && c >= 0xd800 && c <= 0xdfff) {
        if (c >= 0xdc00 || i + 1 >= close || !isLowSurrogate(data.charCodeAt(i + 1))) return -1;
        i += 1;
        length += 1;
      }
      i += 1;
    } else if (data.charCodeAt(i + 1) === LOWER_U) {
      const hex = data.slice(i + 2, i + 6);
      if (canonical ? !isCanonicalControlEscape(hex) : !/^[0-9a-fA-F]{4}$/.test(hex)) return -1;
      i += 6;
    } else if ((canonical ? CANONICAL_ESCAPES : SIMPLE_ESCAPES).includes(data[i + 1])) {
      i += 2;
    } else {
      return -1;
    }
    length++;
  }
  // An escape that ran over the closing quote: the literal does not end there.
  return i === close ? length : -1;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** `hex` (after `\u`) is how JSON.stringify writes a control character with no short escape: `00` and two lowercase hex digits below 0x20. */
function isCanonicalControlEscape(hex: string): boolean {
  if (!/^00[01][0-9a-f]$/.test(hex)) return false;
  return !SHORT_ESCAPED_CONTROLS.includes(parseInt(hex, 16));
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LOWER_U = 0x75;
const SIMPLE_ESCAPES = '"\\/bfnrt';
/** The short escapes JSON.stringify writes (it writes `/` as itself). */
const CANONICAL_ESCAPES = '"\\bfnrt';
/** Control characters JSON.stringify writes with a short escape (\b \t \n \f \r), not `\u00xx`. */
const SHORT_ESCAPED_CONTROLS = [0x08, 0x09, 0x0a, 0x0c, 0x0d];
