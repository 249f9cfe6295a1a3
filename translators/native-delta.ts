/**
 * A native stream's `content_block_delta` data read without parsing it, when it is in the layout the
 * API writes (docs/wire-formats.md §3):
 *
 *   {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}
 *
 * (likewise `input_json_delta` with `partial_json` and `thinking_delta` with `thinking`). Deltas are
 * most of a stream's events, and a full `JSON.parse` of each was the largest single cost of relaying
 * or translating a long stream (bench/RESULTS.md, "Mechanisms kept for speed"). Any other layout (other
 * member order, spacing, delta types, invalid JSON) is not read here: callers parse it as before, so
 * what they do with a delta never depends on which way it was read.
 *
 * Pure; no I/O.
 */

/** The delta types that carry generated text, and the member holding it. */
export type DeltaTextType = 'text_delta' | 'input_json_delta' | 'thinking_delta';

/** A text-carrying delta as read off its data. */
export interface DeltaText {
  /** The content block's index. */
  index: number;
  type: DeltaTextType;
  /** The member holding the text: `text`, `partial_json` or `thinking`. */
  field: 'text' | 'partial_json' | 'thinking';
  /** The text as it stands between its quotes in the data (escapes as sent). */
  raw: string;
  /** The decoded text's length in UTF-16 code units (`String.length`). */
  length: number;
}

const HEAD = '{"type":"content_block_delta","index":';
const DELTA_TYPE = ',"delta":{"type":"';
const LAYOUTS: ReadonlyArray<{ start: string; type: DeltaTextType; field: DeltaText['field'] }> = [
  { start: 'text_delta","text":"', type: 'text_delta', field: 'text' },
  { start: 'input_json_delta","partial_json":"', type: 'input_json_delta', field: 'partial_json' },
  { start: 'thinking_delta","thinking":"', type: 'thinking_delta', field: 'thinking' },
];
const END = '"}}';
/** Longest index read (a safe integer, no leading zero). */
const MAX_INDEX_DIGITS = 9;

/**
 * The text-carrying delta of `data` when it is in the API's layout and valid JSON; undefined otherwise
 * (the caller parses the data itself).
 */
export function readDeltaText(data: string): DeltaText | undefined {
  if (!data.startsWith(HEAD) || !data.endsWith(END)) return undefined;
  let at = HEAD.length;
  const digits = at;
  while (at < data.length && data.charCodeAt(at) >= 0x30 && data.charCodeAt(at) <= 0x39) at++;
  const count = at - digits;
  if (count === 0 || count > MAX_INDEX_DIGITS || (count > 1 && data.charCodeAt(digits) === 0x30)) return undefined;
  if (!data.startsWith(DELTA_TYPE, at)) return undefined;
  at += DELTA_TYPE.length;
  for (const layout of LAYOUTS) {
    if (!data.startsWith(layout.start, at)) continue;
    const from = at + layout.start.length;
    const to = data.length - END.length;
    if (to < from) return undefined;
    const length = jsonStringLength(data, from, to);
    if (length === -1) return undefined;
    return { index: Number(data.slice(digits, digits + count)), type: layout.type, field: layout.field, raw: data.slice(from, to), length };
  }
  return undefined;
}

/** The text of a delta read by {@link readDeltaText}: its raw text when it holds no escape, else decoded. */
export function deltaTextOf(delta: DeltaText): string {
  return delta.raw.includes('\\') ? (JSON.parse(`"${delta.raw}"`) as string) : delta.raw;
}

/** The characters `u` escapes are followed by four hex digits; these stand alone after a backslash. */
const SIMPLE_ESCAPES = new Set([0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74]);
const HEX4 = /^[0-9a-fA-F]{4}$/;

/**
 * The length (UTF-16 code units) of the JSON string whose text runs from `from` to `to` (exclusive,
 * between its quotes); -1 when that text is not a valid JSON string's (an unescaped quote or control
 * character, a bad escape).
 */
function jsonStringLength(text: string, from: number, to: number): number {
  let length = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x22 || code < 0x20) return -1;
    if (code === 0x5c) {
      const letter = text.charCodeAt(i + 1);
      if (letter === 0x75) {
        if (i + 5 >= to || !HEX4.test(text.slice(i + 2, i + 6))) return -1;
        i += 5;
      } else {
        if (i + 1 >= to || !SIMPLE_ESCAPES.has(letter)) return -1;
        i += 1;
      }
    }
    length++;
  }
  return length;
}
