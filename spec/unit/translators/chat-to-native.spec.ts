/**
 * Reverse translation (native client -> chat-completions upstream): mapping tables, request and reply
 * conversion, and recorded chunk streams (spec/fixtures/chat-to-native/*.chat.jsonl, one record per line, run
 * through the transform and compared with *.native.jsonl).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { convertChatErrorToNative, convertChatUsageToNative, mapFinishReasonToStopReason } from '../../../translators/chat-to-native-mapping';
import { convertNativeRequestToChat } from '../../../translators/native-to-chat-request';
import { convertChatCompletionToNative, parseToolArguments } from '../../../translators/chat-to-native-response';
import { createReverseStreamTransform, type NativeStreamEvent } from '../../../translators/chat-to-native-stream';
import { emptyUsage } from '../../../translators/usage';

const FIXTURES = path.resolve(__dirname, '..', '..', '..', '..', 'spec', 'fixtures', 'chat-to-native');
const readLines = (file: string) => fs.readFileSync(path.join(FIXTURES, file), 'utf8').split('\n').filter((line) => line.trim() !== '');

describe('reverse translation', () => {
  describe('finish reason -> stop reason (wire-formats.md §8.4)', () => {
    const table: Array<[string | null | undefined, string]> = [
      ['stop', 'end_turn'], ['length', 'max_tokens'], ['tool_calls', 'tool_use'], ['function_call', 'tool_use'],
      ['content_filter', 'refusal'], ['something_new', 'end_turn'], [null, 'end_turn'], [undefined, 'end_turn'], ['toString', 'end_turn'],
    ];
    for (const [finish, stop] of table) {
      it(`${String(finish)} -> ${stop}`, () => expect(mapFinishReasonToStopReason(finish)).to.equal(stop));
    }
  });

  describe('chat usage -> native usage', () => {
    const table: Array<[unknown, Record<string, number>]> = [
      [{ prompt_tokens: 17, completion_tokens: 10 }, { input_tokens: 17, output_tokens: 10, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }],
      [{ prompt_tokens: 17, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 5 } }, { input_tokens: 12, output_tokens: 10, cache_read_input_tokens: 5, cache_creation_input_tokens: 0 }],
      [{ prompt_tokens: 20, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 10 } }, { input_tokens: 5, output_tokens: 1, cache_read_input_tokens: 5, cache_creation_input_tokens: 10 }],
      [{ prompt_tokens: -3, completion_tokens: 'x' }, { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }],
      [null, { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }],
    ];
    table.forEach(([chat, native], i) => {
      it(`case ${i + 1}: ${JSON.stringify(chat)}`, () => expect(convertChatUsageToNative(chat as any)).to.deep.equal(native));
    });
  });

  describe('error replies', () => {
    const table: Array<[number, string]> = [[400, 'invalid_request_error'], [401, 'authentication_error'], [403, 'permission_error'], [404, 'not_found_error'], [429, 'rate_limit_error'], [500, 'api_error'], [503, 'overloaded_error'], [418, 'invalid_request_error']];
    for (const [status, type] of table) {
      it(`HTTP ${status} -> ${type}`, () => {
        const out = convertChatErrorToNative(status, { error: { message: 'nope', type: 'x', code: null } });
        expect(out).to.deep.equal({ status, body: { type: 'error', error: { type, message: 'nope' } } });
      });
    }
    it('gives a message when the upstream body has none', () => {
      expect(convertChatErrorToNative(502, 'not json').body.error.message).to.equal('the upstream answered HTTP 502');
    });
  });

  describe('request', () => {
    it('converts system, text, images, tool use and tool results, and the sampling fields', () => {
      const { request, warnings } = convertNativeRequestToChat({
        model: 'fam', max_tokens: 300, stream: true, system: [{ type: 'text', text: 'Be terse.' }], temperature: 0.5, top_p: 0.9, top_k: 5,
        stop_sequences: ['END'], metadata: { user_id: 'u_1' },
        tools: [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '20C' }] }, { type: 'text', text: 'Thanks' }] },
        ],
      }, { upstreamModel: 'fam-large' });
      expect(request).to.deep.equal({
        model: 'fam-large', max_tokens: 300, stream: true, stream_options: { include_usage: true }, temperature: 0.5, top_p: 0.9,
        stop: ['END'], user: 'u_1',
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
        tool_choice: 'required', parallel_tool_calls: false,
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
          { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
          { role: 'tool', tool_call_id: 'toolu_1', content: '20C' },
          { role: 'user', content: 'Thanks' },
        ],
      });
      expect(warnings).to.deep.equal(['top_k is not supported by this model family and was ignored']);
    });

    it('maps each tool_choice', () => {
      const choice = (tool_choice: any) => convertNativeRequestToChat({ model: 'm', max_tokens: 1, messages: [], tool_choice }, { upstreamModel: 'm' }).request;
      expect(choice({ type: 'auto' })).to.include({ tool_choice: 'auto' });
      expect(choice({ type: 'none', disable_parallel_tool_use: true })).to.deep.include({ tool_choice: 'none' }).and.not.have.property('parallel_tool_calls');
      expect(choice({ type: 'tool', name: 'x' })).to.deep.include({ tool_choice: { type: 'function', function: { name: 'x' } } });
    });
  });

  describe('reply', () => {
    it('converts text, tool calls, finish reason and usage, naming the canonical model', () => {
      const message = convertChatCompletionToNative({
        id: 'chatcmpl-9', model: 'fam-large',
        choices: [{ message: { content: 'Checking.', tool_calls: [{ id: 'call_1', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls' }],
        usage: { prompt_tokens: 9, completion_tokens: 4 },
      }, { model: 'fam-5' });
      expect(message).to.deep.equal({
        id: 'msg_chatcmpl-9', type: 'message', role: 'assistant', model: 'fam-5',
        content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } }],
        stop_reason: 'tool_use', stop_sequence: null,
        usage: { input_tokens: 9, output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      });
    });
    it('keeps tool arguments that are not a JSON object', () => {
      expect(parseToolArguments('')).to.deep.equal({});
      expect(parseToolArguments('{"x":')).to.deep.equal({ _raw: '{"x":' });
      expect(parseToolArguments('[1]')).to.deep.equal({ _raw: '[1]' });
    });
  });

  describe('stream fixtures', () => {
    const cases = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.chat.jsonl')).map((f) => f.replace('.chat.jsonl', ''));
    it('has fixtures', () => expect(cases).to.include.members(['text-with-usage', 'tool-calls', 'cut-off', 'upstream-error']));
    for (const name of cases) {
      it(name, () => {
        const transform = createReverseStreamTransform({ model: 'fam-large' });
        const events: NativeStreamEvent[] = [];
        for (const line of readLines(`${name}.chat.jsonl`)) events.push(...(line === '[DONE]' ? transform.done() : transform.pushChunk(JSON.parse(line))));
        events.push(...transform.end());
        expect(events).to.deep.equal(readLines(`${name}.native.jsonl`).map((line) => JSON.parse(line)));
        expect(transform.closed).to.equal(true);
      });
    }

    for (const name of cases) {
      it(`${name}, read as the upstream's SSE events (the StreamTransform shape)`, () => {
        const transform = createReverseStreamTransform({ model: 'fam-large' });
        const events: NativeStreamEvent[] = [];
        for (const line of readLines(`${name}.chat.jsonl`)) events.push(...transform.push({ data: line }));
        events.push(...transform.end());
        expect(events).to.deep.equal(readLines(`${name}.native.jsonl`).map((line) => JSON.parse(line)));
      });
    }

    it('an error before any output is a native error reply with its status and the request id', () => {
      const transform = createReverseStreamTransform({ model: 'm', requestId: 'req_1' });
      expect(transform.error).to.equal(undefined);
      transform.push({ data: '{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}' });
      expect(transform.error).to.deep.equal({
        status: 429, headers: {}, body: { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached' }, request_id: 'req_1' },
      });
    });

    it('a record that is not JSON ends the stream with an error event, a 502 before any output', () => {
      const transform = createReverseStreamTransform({ model: 'm' });
      expect(transform.push({ data: '{not json' }).map((e) => e.event)).to.deep.equal(['error']);
      expect(transform.closed).to.equal(true);
      expect(transform.error?.status).to.equal(502);
      expect(transform.push({ data: '[DONE]' })).to.deep.equal([]);
    });

    it('reports usage and stop reason as it goes, and ignores records after the end', () => {
      const transform = createReverseStreamTransform({ model: 'm' });
      for (const line of readLines('text-with-usage.chat.jsonl')) if (line !== '[DONE]') transform.pushChunk(JSON.parse(line));
      expect(transform.stopReason).to.equal('end_turn');
      expect(transform.usage).to.deep.equal({ ...emptyUsage(), input_tokens: 12, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 5 });
      expect(transform.done().map((e) => e.event)).to.deep.equal(['message_stop']);
      expect(transform.pushChunk({ choices: [{ delta: { content: 'late' } }] })).to.deep.equal([]);
    });
  });
});
