import { expect } from 'chai';
import fc from 'fast-check';
import { createChatStreamTransform, serializeChatStreamRecord, type ChatStreamRecord } from '../../../translators/native-to-chat-stream';
import type { ChatCompletionChunk } from '../../../translators/chat-types';
import {
  readExpectedRecords,
  readNativeStreamBytes,
  translatePieces,
  FIXTURE_STREAM_OPTIONS,
} from '../../helpers/native-fixtures';

/** Fixture name -> whether it is translated with `stream_options.include_usage`. */
const FIXTURES: Array<{ name: string; includeUsage: boolean }> = [
  { name: 'text', includeUsage: true },
  { name: 'tool-calls', includeUsage: true },
  { name: 'thinking-text', includeUsage: false },
  { name: 'stop-sequence', includeUsage: false },
  { name: 'max-tokens', includeUsage: false },
  { name: 'error-mid-stream', includeUsage: true },
  { name: 'error-first', includeUsage: false },
  { name: 'truncated', includeUsage: false },
];

/** Cut a buffer at the given offsets (any order, duplicates allowed). */
function cutAt(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets)].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const point of points) {
    pieces.push(bytes.subarray(from, point));
    from = point;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

/** True when `offset` falls inside a multi-byte UTF-8 character (on a continuation byte). */
function isInsideCharacter(bytes: Buffer, offset: number): boolean {
  return offset > 0 && offset < bytes.length && (bytes[offset] & 0xc0) === 0x80;
}

describe('chat stream translator (recorded native streams)', () => {
  for (const { name, includeUsage } of FIXTURES) {
    it(`translates "${name}" to the expected chunk sequence`, () => {
      const records = translatePieces([readNativeStreamBytes(name)], { includeUsage });
      expect(records).to.deep.equal(readExpectedRecords(name));
    });
  }

  it('gives each tool_use block its own dense tool_calls index whose fragments join to the input JSON', () => {
    const records = translatePieces([readNativeStreamBytes('tool-calls')]);
    const calls: Record<number, { id?: string; name?: string; arguments: string }> = {};
    for (const record of records) {
      if (typeof record === 'string' || !('choices' in record)) continue;
      for (const call of record.choices[0]?.delta.tool_calls ?? []) {
        calls[call.index] ??= { arguments: '' };
        if (call.id) calls[call.index].id = call.id;
        if (call.function.name) calls[call.index].name = call.function.name;
        calls[call.index].arguments += call.function.arguments;
      }
    }
    expect(Object.keys(calls)).to.deep.equal(['0', '1']);
    expect(calls[0]).to.include({ id: 'toolu_01Paris', name: 'get_weather' });
    expect(JSON.parse(calls[0].arguments)).to.deep.equal({ city: 'Paris', unit: 'celsius' });
    expect(calls[1]).to.include({ id: 'toolu_02Zurich', name: 'get_weather' });
    expect(JSON.parse(calls[1].arguments)).to.deep.equal({ city: 'Zürich' });
  });

  it('sends thinking as reasoning_content and the signed block, never as content', () => {
    const deltas = translatePieces([readNativeStreamBytes('thinking-text')]).flatMap((record) => (typeof record === 'string' || !('choices' in record) ? [] : [record.choices[0].delta]));
    expect(deltas.map((delta) => delta.content ?? '').join('')).not.to.include('double-check');
    expect(deltas.map((delta) => delta.reasoning_content ?? '').join('')).to.include('double-check');
    expect(deltas.flatMap((delta) => delta.thinking_blocks ?? [])).to.deep.include({ type: 'thinking', thinking: '27 × 453 = 12231; let me double-check…', signature: 'EqQBCgIYAhIMfixture' });
  });

  it('ends error and truncated streams with an error record and no [DONE]', () => {
    for (const name of ['error-mid-stream', 'truncated', 'error-first']) {
      const records = translatePieces([readNativeStreamBytes(name)]);
      expect(records, name).not.to.include('[DONE]');
      expect(records[records.length - 1], name).to.have.property('error');
    }
  });

  it('reports the status an upstream error event stands for', () => {
    const cases: Array<[string, number]> = [
      ['overloaded_error', 503], ['rate_limit_error', 429], ['api_error', 500], ['invalid_request_error', 400],
      ['authentication_error', 401], ['permission_error', 403], ['timeout_error', 504], ['something_new', 500],
    ];
    for (const [type, status] of cases) {
      const transform = createChatStreamTransform({ ...FIXTURE_STREAM_OPTIONS, includeUsage: false });
      transform.push({ event: 'error', data: JSON.stringify({ type: 'error', error: { type, message: 'x' } }) });
      expect(transform.error?.status, type).to.equal(status);
      expect(transform.closed).to.equal(true);
    }
  });

  it('turns an unreadable event into an error record and ignores everything after it', () => {
    const transform = createChatStreamTransform({ ...FIXTURE_STREAM_OPTIONS, includeUsage: false });
    const records = transform.push({ event: 'content_block_delta', data: '{"type":"content_blo' });
    expect(records).to.have.length(1);
    expect(records[0]).to.have.nested.property('error.type', 'server_error');
    expect(transform.error?.status).to.equal(502);
    expect(transform.push({ event: 'message_stop', data: '{"type":"message_stop"}' })).to.deep.equal([]);
    expect(transform.end()).to.deep.equal([]);
    expect(transform.fail('lost')).to.deep.equal([]);
  });

  it('ignores unknown event types and unnamed events', () => {
    const transform = createChatStreamTransform({ ...FIXTURE_STREAM_OPTIONS, includeUsage: false });
    expect(transform.push({ event: 'future_event', data: '{"type":"future_event"}' })).to.deep.equal([]);
    expect(transform.push({ data: '{"type":"message_stop"}' })).to.deep.equal([]);
    expect(transform.closed).to.equal(false);
  });

  it('maps an unknown stop reason to "stop" and reports it', () => {
    const seen: string[] = [];
    const transform = createChatStreamTransform({ ...FIXTURE_STREAM_OPTIONS, includeUsage: false, onUnknownStopReason: (v) => seen.push(v) });
    const records = transform.push({ event: 'message_delta', data: '{"type":"message_delta","delta":{"stop_reason":"brand_new"},"usage":{"output_tokens":3}}' });
    expect((records[0] as any).choices[0].finish_reason).to.equal('stop');
    expect(seen).to.deep.equal(['brand_new']);
    expect(transform.stopReason).to.equal('brand_new');
    expect(transform.usage.output_tokens).to.equal(3);
  });

  it('still sends a finish chunk when message_stop comes without a stop reason', () => {
    const transform = createChatStreamTransform({ ...FIXTURE_STREAM_OPTIONS, includeUsage: false });
    const records = transform.push({ event: 'message_stop', data: '{"type":"message_stop"}' });
    expect((records[0] as any).choices[0]).to.include({ finish_reason: 'stop' });
    expect(records[1]).to.equal('[DONE]');
  });
});

describe('chat stream translator: any split of the byte stream', () => {
  for (const { name, includeUsage } of FIXTURES) {
    it(`"${name}": random cuts (including inside multi-byte characters) give identical output`, () => {
      const bytes = readNativeStreamBytes(name);
      const whole = translatePieces([bytes], { includeUsage });
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 40 }), (offsets) => {
          expect(translatePieces(cutAt(bytes, offsets), { includeUsage })).to.deep.equal(whole);
        }),
        { numRuns: 200 },
      );
    });
  }

  it('holds for a single cut at every byte offset of the text stream, and the stream has cuts inside characters', () => {
    const bytes = readNativeStreamBytes('text');
    const whole: ChatStreamRecord[] = translatePieces([bytes], { includeUsage: true });
    let insideCharacter = 0;
    for (let offset = 0; offset <= bytes.length; offset++) {
      if (isInsideCharacter(bytes, offset)) insideCharacter++;
      expect(translatePieces(cutAt(bytes, [offset]), { includeUsage: true }), `cut at ${offset}`).to.deep.equal(whole);
    }
    expect(insideCharacter).to.be.greaterThan(10);
  });

  it('holds when the stream arrives one byte at a time', () => {
    const bytes = readNativeStreamBytes('tool-calls');
    const pieces = [...bytes].map((byte) => Buffer.from([byte]));
    expect(translatePieces(pieces, { includeUsage: true })).to.deep.equal(readExpectedRecords('tool-calls'));
  });
});

describe('chat stream translator: deltas read without parsing, chunks written without serialising', () => {
  const options = (includeUsage: boolean) => ({ model: 'model-sonnet-4.6', created: 1_750_000_000, includeUsage });
  const start = { event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 3, output_tokens: 1 } } }) };
  const delta = (type: string, field: string, text: string, spaced: boolean) => {
    const data = { type: 'content_block_delta', index: 0, delta: { type, [field]: text } };
    return { event: 'content_block_delta', data: spaced ? JSON.stringify(data, null, 1) : JSON.stringify(data) };
  };
  const deltaTypes = fc.constantFrom(['text_delta', 'text'], ['thinking_delta', 'thinking'], ['input_json_delta', 'partial_json'], ['signature_delta', 'signature'], ['citations_delta', 'text']);
  /** The block the deltas are in: a thinking block (reasoning chunks) or a tool call (argument chunks, with any index). */
  const blocks = fc.oneof(
    fc.constant({ type: 'thinking', thinking: '' }),
    fc.record({ type: fc.constant('tool_use'), id: fc.constant('toolu_1'), name: fc.constant('get_weather'), input: fc.constant({}) }),
  );

  it('translates a delta in the API layout exactly as its parsed form (any text, any block)', () => {
    fc.assert(fc.property(fc.array(fc.tuple(deltaTypes, fc.string({ unit: 'binary' })), { maxLength: 6 }), fc.boolean(), blocks, (deltas, includeUsage, block) => {
      const fast = createChatStreamTransform(options(includeUsage));
      const parsed = createChatStreamTransform(options(includeUsage));
      const blockStart = { event: 'content_block_start', data: JSON.stringify({ type: 'content_block_start', index: 0, content_block: block }) };
      expect(fast.push(start)).to.deep.equal(parsed.push(start));
      expect(fast.push(blockStart)).to.deep.equal(parsed.push(blockStart));
      for (const [[type, field], text] of deltas) {
        const records = fast.push(delta(type, field, text, false));
        expect(records).to.deep.equal(parsed.push(delta(type, field, text, true)));
        // The content chunks are written by serializeChatStreamRecord itself: the bytes JSON.stringify writes.
        for (const record of records) expect(serializeChatStreamRecord(record)).to.equal(JSON.stringify(record));
      }
      expect(fast.streamedCharacters).to.equal(parsed.streamedCharacters);
    }), { numRuns: 1000 });
  });

  /**
   * The plain version of the kept delta chunk writer (serializeChatStreamRecord, RESULTS.md "Mechanisms
   * kept for speed"): one string template over the chunk's members, as it is when written.
   */
  const writePlainDeltaChunk = (chunk: ChatCompletionChunk): string => {
    const delta = chunk.choices[0].delta as { content?: string; reasoning_content?: string; tool_calls?: [{ index: number; function: { arguments: string } }] };
    const deltaJson = delta.content !== undefined ? `{"content":${JSON.stringify(delta.content)}}`
      : delta.reasoning_content !== undefined ? `{"reasoning_content":${JSON.stringify(delta.reasoning_content)}}`
        : `{"tool_calls":[{"index":${delta.tool_calls![0].index},"function":{"arguments":${JSON.stringify(delta.tool_calls![0].function.arguments)}}}]}`;
    const usage = chunk.usage === null ? ',"usage":null' : '';
    return `{"id":${JSON.stringify(chunk.id)},"object":"chat.completion.chunk","created":${JSON.stringify(chunk.created)},"model":${JSON.stringify(chunk.model)},"choices":[{"index":0,"delta":${deltaJson},"logprobs":null,"finish_reason":null}]${usage}}`;
  };

  it('writes a text, reasoning or tool-argument chunk as its plain template does, the bytes JSON.stringify writes (any id, model, created, index and text), and not by serialising it', () => {
    const blocksByDelta = {
      text_delta: { block: { type: 'text', text: '' }, field: 'text' },
      thinking_delta: { block: { type: 'thinking', thinking: '' }, field: 'thinking' },
      input_json_delta: { block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }, field: 'partial_json' },
    } as const;
    const text = fc.string({ unit: 'binary', minLength: 1 });
    fc.assert(fc.property(fc.constantFrom(...(Object.keys(blocksByDelta) as Array<keyof typeof blocksByDelta>)), text, text, fc.string({ unit: 'binary' }), fc.integer(), fc.boolean(), fc.nat(),
      (type, deltaText, model, id, created, includeUsage, index) => {
        const { block, field } = blocksByDelta[type];
        const transform = createChatStreamTransform({ model, created, includeUsage });
        transform.push({ event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { id, usage: { input_tokens: 3, output_tokens: 1 } } }) });
        transform.push({ event: 'content_block_start', data: JSON.stringify({ type: 'content_block_start', index, content_block: block }) });
        const [record] = transform.push({ event: 'content_block_delta', data: JSON.stringify({ type: 'content_block_delta', index, delta: { type, [field]: deltaText } }) });
        const written = serializeChatStreamRecord(record);
        expect(written, type).to.equal(writePlainDeltaChunk(record as ChatCompletionChunk));
        expect(written, type).to.equal(JSON.stringify(record));
        // Written from the stream's layout, not from the record: changed (which no caller does), its bytes show where they came from.
        (record as { model: string }).model = `${model}!`;
        expect(serializeChatStreamRecord(record), type).to.equal(written);
      }), { numRuns: 1000 });
  });

  it('writes every record of the recorded streams as JSON.stringify does', () => {
    for (const { name, includeUsage } of FIXTURES) {
      for (const record of translatePieces([readNativeStreamBytes(name)], { includeUsage })) {
        expect(serializeChatStreamRecord(record)).to.equal(record === '[DONE]' ? record : JSON.stringify(record));
      }
    }
  });
});
