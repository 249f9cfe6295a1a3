/**
 * Recorded native streams for translator tests. A fixture file (`spec/fixtures/native-<name>.jsonl`)
 * holds one SSE event per line: the event's `data` JSON, whose `type` is also its `event:` name
 * (wire-formats.md §3). Expected chat output (`spec/fixtures/chat-<name>.jsonl`) holds one record per
 * line: a chunk or error object, or the literal `[DONE]`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createSseDecoder } from '../../lib/http/sse';
import { createChatStreamTransform, type ChatStreamOptions, type ChatStreamRecord } from '../../translators/native-to-chat-stream';

/** Source folder of the fixtures (tests run from dist/spec, the files stay in spec/fixtures). */
export const FIXTURES_DIR = path.resolve(__dirname, '../../../spec/fixtures');

/** Options every fixture is translated with, apart from `includeUsage`. */
export const FIXTURE_STREAM_OPTIONS = { model: 'model-sonnet-4.6', created: 1_700_000_000 };

/** The events of a recorded native stream: `{event, data}` with `data` kept as recorded. */
export function readNativeEvents(name: string): Array<{ event: string; data: string }> {
  const text = fs.readFileSync(path.join(FIXTURES_DIR, `native-${name}.jsonl`), 'utf8');
  return text.split('\n').filter((line) => line.trim() !== '').map((line) => ({ event: JSON.parse(line).type, data: line }));
}

/** The bytes the upstream would send for a recorded stream. */
export function readNativeStreamBytes(name: string): Buffer {
  return Buffer.from(readNativeEvents(name).map(({ event, data }) => `event: ${event}\ndata: ${data}\n\n`).join(''), 'utf8');
}

/** The expected chat records of a fixture (objects, or the string `[DONE]`). */
export function readExpectedRecords(name: string): ChatStreamRecord[] {
  const text = fs.readFileSync(path.join(FIXTURES_DIR, `chat-${name}.jsonl`), 'utf8');
  return text.split('\n').filter((line) => line.trim() !== '').map((line) => (line === '[DONE]' ? '[DONE]' : JSON.parse(line)));
}

/**
 * Feed byte pieces through the real SSE decoder and a fresh transform, as the chat route does, and
 * return every record produced (including what `end()` adds when the stream stopped short).
 */
export function translatePieces(pieces: Buffer[], options: Partial<ChatStreamOptions> = {}): ChatStreamRecord[] {
  const transform = createChatStreamTransform({ ...FIXTURE_STREAM_OPTIONS, includeUsage: false, ...options });
  const records: ChatStreamRecord[] = [];
  const decoder = createSseDecoder((event) => records.push(...transform.push(event)));
  for (const piece of pieces) decoder.write(piece);
  decoder.end();
  records.push(...transform.end());
  return records;
}

/** A recorded stream as fake-upstream events, sent verbatim (one write per event). */
export function fixtureStreamEvents(name: string): Array<{ raw: string }> {
  return readNativeEvents(name).map(({ event, data }) => ({ raw: `event: ${event}\ndata: ${data}\n\n` }));
}
