/**
 * Recorded native streams run through the Responses stream transform. Native inputs are the shared
 * `spec/fixtures/native-<name>.jsonl` files, or `spec/fixtures/responses/native-<name>.jsonl` for
 * streams only this route needs (server tools, custom tools); the expected Responses events are in
 * `spec/fixtures/responses/<name>.jsonl`, one event per line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createSseDecoder } from '../../lib/http/sse';
import { createResponsesStreamTransform, type ResponsesStreamOptions } from '../../translators/responses-stream';
import type { ResponsesStreamEvent, ResponsesStreamRecord } from '../../translators/responses-types';
import { FIXTURES_DIR } from './native-fixtures';

export const RESPONSES_FIXTURES_DIR = path.join(FIXTURES_DIR, 'responses');

/** Ids `<prefix>_1`, `<prefix>_2`, ... in order of creation (deterministic output for fixtures). */
export function counterIds(): (prefix: string) => string {
  let next = 0;
  return (prefix) => `${prefix}_${++next}`;
}

/** The options every fixture is translated with, apart from what a test overrides. */
export function fixtureOptions(overrides: Partial<ResponsesStreamOptions> = {}): ResponsesStreamOptions {
  return {
    id: 'resp_fixture',
    createdAt: 1_700_000_000,
    model: 'model-sonnet-4.6',
    request: { model: 'sonnet', input: 'hi' },
    toolNames: new Map(),
    newId: counterIds(),
    includeEncrypted: false,
    ...overrides,
  };
}

/** The bytes the upstream would send for a native fixture. */
export function readNativeFixtureBytes(name: string): Buffer {
  const own = path.join(RESPONSES_FIXTURES_DIR, `native-${name}.jsonl`);
  const file = fs.existsSync(own) ? own : path.join(FIXTURES_DIR, `native-${name}.jsonl`);
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '');
  return Buffer.from(lines.map((line) => `event: ${JSON.parse(line).type}\ndata: ${line}\n\n`).join(''), 'utf8');
}

/** The expected Responses events of a fixture. */
export function readExpectedEvents(name: string): ResponsesStreamEvent[] {
  return fs.readFileSync(path.join(RESPONSES_FIXTURES_DIR, `${name}.jsonl`), 'utf8')
    .split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as ResponsesStreamEvent);
}

/** Feed byte pieces through the real SSE decoder and a fresh transform, as the route does; `end()` included. */
export function translateResponsesPieces(pieces: Buffer[], options: Partial<ResponsesStreamOptions> = {}): ResponsesStreamEvent[] {
  const transform = createResponsesStreamTransform(fixtureOptions(options));
  const records: ResponsesStreamRecord[] = [];
  const decoder = createSseDecoder((event) => records.push(...transform.push(event)));
  for (const piece of pieces) decoder.write(piece);
  decoder.end();
  records.push(...transform.end());
  // What the route writes is the JSON text of each event, so compare that.
  return records.map((record) => JSON.parse(JSON.stringify(record)) as ResponsesStreamEvent);
}
