import { expect } from 'chai';
import fc from 'fast-check';
import { createSseDecoder } from '../../../lib/http/sse';
import { createResponsesStreamTransform, serializeResponsesStreamRecord } from '../../../translators/responses-stream';
import { ResponsesDeltaEvent, type ResponsesDeltaType } from '../../../translators/responses-delta-events';
import { decodeReasoning } from '../../../translators/responses-reasoning';
import type { ResponsesStreamEvent, ResponsesStreamRecord } from '../../../translators/responses-types';
import { fixtureOptions, readExpectedEvents, readNativeFixtureBytes, translateResponsesPieces } from '../../helpers/responses-fixtures';

/** Fixture name -> the options it is translated with. */
const FIXTURES: Array<{ name: string; options?: Parameters<typeof translateResponsesPieces>[1] }> = [
  { name: 'text' },
  { name: 'tool-calls', options: { toolNames: new Map([['get_weather', { name: 'get_weather', kind: 'function' }]]) } },
  { name: 'thinking-text', options: { includeEncrypted: true } },
  { name: 'max-tokens' },
  { name: 'error-mid-stream' },
  { name: 'error-first' },
  { name: 'truncated' },
  { name: 'web-search' },
  {
    name: 'custom-tool',
    options: { toolNames: new Map([['apply_patch', { name: 'apply_patch', kind: 'custom' }], ['crm__lookup', { name: 'lookup', namespace: 'crm', kind: 'function' }]]) },
  },
];

/** Split a buffer into pieces of `size` bytes (cutting inside events and characters). */
function chop(bytes: Buffer, size: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
  return pieces;
}

const last = (events: ResponsesStreamRecord[]) => events[events.length - 1] as ResponsesStreamEvent;

describe('Responses stream translator (recorded native streams)', () => {
  for (const { name, options } of FIXTURES) {
    it(`translates "${name}" to the expected event sequence`, () => {
      expect(translateResponsesPieces([readNativeFixtureBytes(name)], options)).to.deep.equal(readExpectedEvents(name));
    });

    it(`gives "${name}" the same events whatever the byte split`, () => {
      const whole = translateResponsesPieces([readNativeFixtureBytes(name)], options);
      expect(translateResponsesPieces(chop(readNativeFixtureBytes(name), 7), options)).to.deep.equal(whole);
    });
  }

  it('copies text deltas found in place byte for byte as JSON.stringify would write them, escapes included', () => {
    const delta = (literal: string) => `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":${literal}}}`;
    const native = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      ...['"plain"', '"quote \\"q\\" and \\\\ slash"', '"caf\\u00e9 \\/ odd escapes"', '"line\\nbreak 🌍"', '""'].map((literal) => `event: content_block_delta\ndata: ${delta(literal)}\n\n`),
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ].join('');
    const transform = createResponsesStreamTransform(fixtureOptions());
    const written: string[] = [];
    const decoder = createSseDecoder((event) => {
      for (const record of transform.push(event)) written.push(JSON.stringify(record));
    });
    decoder.write(Buffer.from(native));
    const deltas = written.map((json) => JSON.parse(json)).filter((event) => event.type === 'response.output_text.delta');
    expect(deltas.map((event) => event.delta)).to.deep.equal(['plain', 'quote "q" and \\ slash', 'café / odd escapes', 'line\nbreak 🌍']);
    for (const json of written) expect(json).to.equal(JSON.stringify(JSON.parse(json)));
    const done = written.map((json) => JSON.parse(json)).find((event) => event.type === 'response.output_text.done');
    expect(done.text).to.equal(deltas.map((event) => event.delta).join(''));
  });

  it('numbers every event from 0 without gaps, each stream ending with one terminal event', () => {
    for (const { name, options } of FIXTURES) {
      const events = translateResponsesPieces([readNativeFixtureBytes(name)], options);
      expect(events.map((event) => event.sequence_number), name).to.deep.equal(events.map((_, i) => i));
      expect(['response.completed', 'response.incomplete', 'response.failed'], name).to.include(last(events).type);
      expect(events.filter((event) => /^response\.(completed|incomplete|failed)$/.test(event.type)), name).to.have.length(1);
    }
  });

  it('ends a max_tokens reply as response.incomplete with reason max_output_tokens', () => {
    const response = last(translateResponsesPieces([readNativeFixtureBytes('max-tokens')])).response as any;
    expect(response.status).to.equal('incomplete');
    expect(response.incomplete_details).to.deep.equal({ reason: 'max_output_tokens' });
  });

  it('reports usage in Responses terms: cached tokens inside input_tokens', () => {
    const response = last(translateResponsesPieces([readNativeFixtureBytes('text')])).response as any;
    // native-text: input 25, cache writes 10, cache reads 100, output 12
    expect(response.usage).to.deep.equal({
      input_tokens: 135, input_tokens_details: { cached_tokens: 100 }, output_tokens: 12, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 147,
    });
  });

  it('carries the thinking block and its signature in encrypted_content only when include asks for it', () => {
    const withContent = translateResponsesPieces([readNativeFixtureBytes('thinking-text')], { includeEncrypted: true });
    const done = withContent.find((event) => event.type === 'response.output_item.done') as any;
    expect(decodeReasoning(done.item)).to.deep.equal({ type: 'thinking', thinking: '27 × 453 = 12231; let me double-check…', signature: 'EqQBCgIYAhIMfixture' });
    const without = translateResponsesPieces([readNativeFixtureBytes('thinking-text')]);
    const items = without.filter((event) => event.type === 'response.output_item.done').map((event: any) => event.item);
    expect(items.filter((item) => item.type === 'reasoning').map((item) => item.encrypted_content)).to.deep.equal([null, null]);
  });

  it('keeps encrypted_content on the stored (full) response even when the client did not ask for it', () => {
    const transform = createResponsesStreamTransform(fixtureOptions());
    const decoder = createSseDecoder((event) => transform.push(event));
    decoder.write(readNativeFixtureBytes('thinking-text'));
    expect((transform.response.output[0] as any).encrypted_content).to.match(/^gw1\./);
    expect(transform.usage.output_tokens).to.equal(240);
    expect(transform.stopReason).to.equal('end_turn');
  });

  it('turns an upstream error into response.failed naming it, and keeps the HTTP status it stands for', () => {
    const transform = createResponsesStreamTransform(fixtureOptions());
    const events = transform.push({ event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) });
    expect(events.map((event) => event.type)).to.deep.equal(['response.created', 'response.in_progress', 'response.failed']);
    expect((last(events).response as any).error).to.deep.equal({ code: 'server_error', message: 'Overloaded' });
    expect(transform.error?.status).to.equal(503);
    expect(transform.push({ event: 'message_stop', data: '{}' })).to.deep.equal([]);
  });

  it('fails on an unreadable upstream event instead of skipping it', () => {
    const transform = createResponsesStreamTransform(fixtureOptions());
    const events = transform.push({ event: 'message_start', data: '{not json' });
    expect(last(events).type).to.equal('response.failed');
    expect((last(events).response as any).error.message).to.contain('unreadable message_start');
  });

  it('reports a lost connection once', () => {
    const transform = createResponsesStreamTransform(fixtureOptions());
    expect(last(transform.fail('the upstream connection was lost mid-stream')).type).to.equal('response.failed');
    expect(transform.fail('again')).to.deep.equal([]);
    expect(transform.end()).to.deep.equal([]);
  });
});

describe('Responses stream translator: deltas read without parsing, delta events written without serialising', () => {
  const native = (texts: Array<[string, string, string]>, spaced: boolean) => {
    const event = (name: string, data: unknown) => ({ event: name, data: spaced ? JSON.stringify(data, null, 1) : JSON.stringify(data) });
    return [
      event('message_start', { type: 'message_start', message: { id: 'm', usage: { input_tokens: 1, output_tokens: 1 } } }),
      event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
      event('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
      event('content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } }),
      ...texts.map(([type, field, text]) => {
        const index = type === 'thinking_delta' || type === 'signature_delta' ? 0 : type === 'text_delta' ? 1 : 2;
        return event('content_block_delta', { type: 'content_block_delta', index, delta: { type, [field]: text } });
      }),
      ...[0, 1, 2].map((index) => event('content_block_stop', { type: 'content_block_stop', index })),
      event('message_stop', { type: 'message_stop' }),
    ];
  };
  const deltas = fc.array(fc.tuple(
    fc.constantFrom(['text_delta', 'text'], ['thinking_delta', 'thinking'], ['signature_delta', 'signature'], ['input_json_delta', 'partial_json']),
    fc.string({ unit: 'binary', maxLength: 12 }),
  ).map(([[type, field], text]) => [type, field, text] as [string, string, string]), { maxLength: 8 });
  const options = () => fixtureOptions({ toolNames: new Map([['get_weather', { name: 'get_weather', kind: 'function' }]]), includeEncrypted: true });

  it('translates deltas in the API layout exactly as their parsed form, and writes every event as JSON.stringify does', () => {
    fc.assert(fc.property(deltas, (texts) => {
      const fast = createResponsesStreamTransform(options());
      const parsed = createResponsesStreamTransform(options());
      const spaced = native(texts, true);
      native(texts, false).forEach((event, i) => {
        const records = fast.push(event);
        expect(records).to.deep.equal(parsed.push(spaced[i]));
        for (const record of records) expect(serializeResponsesStreamRecord(record)).to.equal(JSON.stringify(record));
      });
    }), { numRuns: 500 });
  });

  it('writes each delta event\'s own JSON, the bytes JSON.stringify writes (any id, index, sequence and text)', () => {
    const types: ResponsesDeltaType[] = ['response.output_text.delta', 'response.reasoning_summary_text.delta', 'response.function_call_arguments.delta', 'response.custom_tool_call_input.delta'];
    fc.assert(fc.property(fc.constantFrom(...types), fc.nat(), fc.string({ unit: 'binary' }), fc.nat(), fc.string({ unit: 'binary' }), (type, seq, id, at, text) => {
      const event = new ResponsesDeltaEvent(type, seq, id, at, text);
      expect(event.json()).to.equal(JSON.stringify(event));
      expect(serializeResponsesStreamRecord(event)).to.equal(JSON.stringify(event));
    }), { numRuns: 1000 });
  });

  it('makes every delta event of the recorded streams one that writes its own JSON (so the checks above test that path)', () => {
    let deltas = 0;
    for (const { name, options: fixture } of FIXTURES) {
      const transform = createResponsesStreamTransform(fixtureOptions(fixture ?? {}));
      const records: ResponsesStreamRecord[] = [];
      const decoder = createSseDecoder((event) => records.push(...transform.push(event)));
      decoder.write(readNativeFixtureBytes(name));
      decoder.end();
      for (const record of records) {
        if (!record.type.endsWith('.delta')) continue;
        deltas++;
        expect(record, record.type).to.be.instanceOf(ResponsesDeltaEvent);
      }
    }
    expect(deltas).to.be.greaterThan(10);
  });

  it('writes the recorded streams\' events as JSON.stringify does', () => {
    for (const { name, options: fixture } of FIXTURES) {
      for (const record of translateResponsesPieces([readNativeFixtureBytes(name)], fixture)) {
        expect(serializeResponsesStreamRecord(record)).to.equal(JSON.stringify(record));
      }
    }
    const event = { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'x', logprobs: [] };
    for (const odd of [{ ...event, logprobs: [{ token: 'x' }] }, { ...event, sequence_number: 1.5 }, { ...event, extra: 1 }, Object.fromEntries(Object.entries(event).reverse()) as typeof event]) {
      expect(serializeResponsesStreamRecord(odd)).to.equal(JSON.stringify(odd));
    }
  });
});
