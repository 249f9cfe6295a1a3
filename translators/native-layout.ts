/**
 * What billing reads of the native API's replies, read without parsing the whole of them when they are
 * in the layout the API writes: a whole message's closing members (readMessageTail), and a stream's
 * deltas (readDeltaEvent, deltaTextLength).
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

/** The delta types that carry generated text. */
export type DeltaTextType = 'text_delta' | 'input_json_delta' | 'thinking_delta';

/**
 * The API's layout of a text-carrying delta, its text a valid JSON string (RFC 8259 section 7: no
 * unescaped quote, backslash or control character; escapes `\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`
 * `\uXXXX`). Captures: the block index (a safe integer, no leading zero), the delta type with its text's
 * member (`text_delta","text`), the text as it stands between its quotes (escapes as sent).
 */
// eslint-disable-next-line no-control-regex -- a JSON string excludes the control characters
const DELTA_LAYOUT = /^\{"type":"content_block_delta","index":(0|[1-9][0-9]{0,8}),"delta":\{"type":"(text_delta","text|input_json_delta","partial_json|thinking_delta","thinking)":"((?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)"\}\}$/;

/** The length of the text a delta in the API's layout carries, as `String.length` counts the decoded text; -1 when `data` is not one. */
export function deltaTextLength(data: string): number {
  const match = DELTA_LAYOUT.exec(data);
  return match === null ? -1 : decodedLength(match[3]);
}

/** The decoded length (UTF-16 code units) of a valid JSON string's text: each escape is one unit. */
function decodedLength(raw: string): number {
  let length = raw.length;
  for (let at = raw.indexOf('\\'); at !== -1; at = raw.indexOf('\\', at + 2)) {
    const extra = raw.charCodeAt(at + 1) === 0x75 ? 5 : 1;
    length -= extra;
    at += extra - 1;
  }
  return length;
}

/** A content_block_delta event's data as the stream transforms read it: its block index and its delta. */
export interface DeltaEventData {
  index: number;
  delta: { type: DeltaTextType; text?: string; partial_json?: string; thinking?: string };
}

/**
 * The data of a content_block_delta event in the API's layout, as `JSON.parse` gives its members
 * the transforms read (`index`, `delta.type` and the delta's text), without parsing it; undefined for
 * any other data (the transform parses it). One regular expression checks the layout and the string;
 * the text is decoded only when it holds an escape.
 */
export function readDeltaEvent(data: string): DeltaEventData | undefined {
  const match = DELTA_LAYOUT.exec(data);
  if (match === null) return undefined;
  const raw = match[3];
  const text = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
  const index = Number(match[1]);
  if (match[2] === 'text_delta","text') return { index, delta: { type: 'text_delta', text } };
  if (match[2] === 'input_json_delta","partial_json') return { index, delta: { type: 'input_json_delta', partial_json: text } };
  return { index, delta: { type: 'thinking_delta', thinking: text } };
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
