/**
 * What billing reads of the native API's replies, read without parsing the whole of them when they are
 * in the layout the API writes: a whole message's closing members (readMessageTail), and a stream's
 * deltas (readDeltaText). Any other layout is not read here: callers parse it, so what they do never
 * depends on which way it was read.
 *
 * A stream's `content_block_delta` data, in the layout the API writes (docs/wire-formats.md §3):
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

/** What a whole message's closing members say: its usage and its stop reason. */
export interface MessageTail {
  usage: unknown;
  stopReason: unknown;
}

const USAGE_MEMBER = Buffer.from(',"usage":');
const STOP_REASON_MEMBER = Buffer.from(',"stop_reason":');
/** How far from the end the closing members are looked for (usage, with its cache and server-tool details, is well under it). */
const TAIL_BYTES = 4096;

/**
 * The usage and stop reason of a whole native message (docs/wire-formats.md §2.2) whose last members
 * are, as the API writes them, `"stop_reason":…,"stop_sequence":…,"usage":{…}}`: read from its last
 * few kilobytes, parsing only those members. Kept for speed: the native route reads a whole reply only
 * for these, and parsing all of it cost in proportion to its content (RESULTS.md). Undefined when the
 * message ends otherwise (the caller parses it all): the members are taken only when the text from
 * `,"usage":` to the end is that member's value and the message's closing brace, and the text from
 * `,"stop_reason":` to there is exactly `stop_reason` and `stop_sequence`, so a member of a nested
 * object is never taken for the message's.
 */
export function readMessageTail(bytes: Buffer): MessageTail | undefined {
  let end = bytes.length - 1;
  while (end >= 0 && (bytes[end] === 0x20 || bytes[end] === 0x0a || bytes[end] === 0x0d || bytes[end] === 0x09)) end--;
  if (end < 0 || bytes[end] !== 0x7d) return undefined;
  const usageAt = bytes.lastIndexOf(USAGE_MEMBER, end);
  if (usageAt === -1 || end - usageAt > TAIL_BYTES) return undefined;
  const stopAt = bytes.lastIndexOf(STOP_REASON_MEMBER, usageAt);
  if (stopAt === -1 || usageAt - stopAt > TAIL_BYTES) return undefined;
  try {
    const usage: unknown = JSON.parse(bytes.toString('utf8', usageAt + USAGE_MEMBER.length, end));
    const stop = JSON.parse(`{${bytes.toString('utf8', stopAt + 1, usageAt)}}`) as Record<string, unknown>;
    if (!usage || typeof usage !== 'object' || Array.isArray(usage)) return undefined;
    const names = Object.keys(stop);
    if (names.length !== 2 || names[0] !== 'stop_reason' || names[1] !== 'stop_sequence') return undefined;
    return { usage, stopReason: stop.stop_reason };
  } catch {
    return undefined;
  }
}
