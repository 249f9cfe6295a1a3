import net from 'node:net';
import { expect } from 'chai';
import OpenAI from 'openai';
import type { FakeHandler } from '../helpers/fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from '../helpers/gateway';
import { fixtureStreamEvents } from '../helpers/native-fixtures';

const PNG_DATA_URL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** Every fixture-driven stream handler: the named recording whenever a stream is asked for. */
const streamFixture = (name: string): FakeHandler => () => ({ kind: 'stream', events: fixtureStreamEvents(name) });

/** Raw `data:` payloads of an SSE body. */
function dataRecords(body: string): string[] {
  return body.split('\n\n').filter((record) => record.startsWith('data: ')).map((record) => record.slice('data: '.length));
}

describe('chat completions (openai client): streams, usage, images, fields, errors', () => {
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    gw = await startTestGateway();
    client = new OpenAI({ apiKey: KEYS.all, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.upstream.requests.length = 0;
    gw.upstream.setHandler(streamFixture('text'));
  });

  const post = (body: Record<string, unknown>) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.all}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }], ...body }),
    });

  describe('streams', () => {
    it('writes the records of the events of one upstream chunk together, in one HTTP chunk', async () => {
      const events = fixtureStreamEvents('text');
      let openSecond!: () => void;
      const second = new Promise<void>((resolve) => (openSecond = resolve));
      // Two bursts, each one upstream write: up to the first text delta, then the rest.
      const burst = (items: Array<{ raw: string }>) => ({ raw: items.map((item) => item.raw).join('') });
      gw.upstream.setHandler(() => ({ kind: 'stream', events: [burst(events.slice(0, 4)), { until: second }, burst(events.slice(4))] }));
      const { port } = new URL(gw.url);
      const socket = net.connect(Number(port), '127.0.0.1');
      const body = JSON.stringify({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }], stream: true });
      socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${KEYS.all}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      // Read as latin1 (byte for byte, for the chunk sizes); the reply stays open (keep-alive) until its last chunk.
      let raw = '';
      await new Promise<void>((resolve, reject) => {
        socket.on('data', (chunk: Buffer) => {
          raw += chunk.toString('latin1');
          if (raw.includes('llo"}')) openSecond();
          if (raw.endsWith('\r\n0\r\n\r\n')) resolve();
        });
        socket.once('error', reject);
        socket.once('close', () => reject(new Error(`closed before the last chunk: ${raw}`)));
      }).finally(() => {
        openSecond();
        socket.destroy();
      });
      // The chunked body, HTTP chunk by HTTP chunk (chunk-size CRLF data CRLF, ending with size 0).
      let rest = raw.slice(raw.indexOf('\r\n\r\n') + 4);
      const httpChunks: string[] = [];
      for (;;) {
        const size = parseInt(rest.slice(0, rest.indexOf('\r\n')), 16);
        if (size === 0) break;
        const start = rest.indexOf('\r\n') + 2;
        httpChunks.push(Buffer.from(rest.slice(start, start + size), 'latin1').toString('utf8'));
        rest = rest.slice(start + size + 2);
      }
      expect(httpChunks).to.have.length(2);
      expect(dataRecords(httpChunks[0]).map((record) => JSON.parse(record).choices[0].delta)).to.deep.equal([{ role: 'assistant', content: '' }, { content: 'Héllo' }]);
      expect(dataRecords(httpChunks[1]).at(-1)).to.equal('[DONE]');
      expect(dataRecords(httpChunks.join('')).length).to.be.greaterThan(4);
    });

    it('include_usage: usage null on every chunk, then one chunk with empty choices and the usage', async () => {
      const stream = await client.chat.completions.create({
        model: 'sonnet', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Hi' }],
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      const last = chunks[chunks.length - 1];
      expect(last.choices).to.deep.equal([]);
      expect(last.usage).to.deep.equal({ prompt_tokens: 135, completion_tokens: 12, total_tokens: 147, prompt_tokens_details: { cached_tokens: 100 } });
      expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).to.equal(true);
      expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).to.equal('Héllo, wörld 🌍 — 日本語です。');
      expect(chunks[chunks.length - 2].choices[0].finish_reason).to.equal('stop');
      expect(new Set(chunks.map((chunk) => chunk.id))).to.deep.equal(new Set(['chatcmpl-msg_01Fixture']));
      expect(chunks.every((chunk) => chunk.model === 'model-sonnet-4.6')).to.equal(true);
    });

    it('without include_usage there is no usage chunk; the wire ends with data: [DONE]', async () => {
      const response = await post({ stream: true });
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^text\/event-stream/);
      const records = dataRecords(await response.text());
      expect(records[records.length - 1]).to.equal('[DONE]');
      const chunks = records.slice(0, -1).map((record) => JSON.parse(record));
      expect(chunks[0].choices[0].delta).to.deep.equal({ role: 'assistant', content: '' });
      expect(chunks.every((chunk) => !('usage' in chunk) && chunk.choices.length === 1)).to.equal(true);
    });

    it('writes each chunk as its upstream event arrives (nothing held back until the next event)', async () => {
      const events = fixtureStreamEvents('text');
      let openFirst!: () => void;
      let openSecond!: () => void;
      const first = new Promise<void>((resolve) => (openFirst = resolve));
      const second = new Promise<void>((resolve) => (openSecond = resolve));
      // Held after the first text delta, and after message_delta (before message_stop).
      gw.upstream.setHandler(() => ({ kind: 'stream', events: [...events.slice(0, 4), { until: first }, ...events.slice(4, 8), { until: second }, ...events.slice(8)] }));
      const response = await post({ stream: true });
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let received = '';
      const readUntil = async (needle: string) => {
        while (!received.includes(needle)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`stream ended before ${needle}`);
          received += decoder.decode(value, { stream: true });
        }
      };
      try {
        await readUntil('"content":"Héllo"');
        expect(received).not.to.include('wörld');
        openFirst();
        await readUntil('"finish_reason":"stop"');
        expect(received).not.to.include('[DONE]');
        openSecond();
        await readUntil('data: [DONE]');
      } finally {
        openFirst();
        openSecond();
      }
    });

    it('settles and logs the streamed usage (prompt includes cache reads and writes)', async () => {
      const response = await post({ stream: true });
      const requestId = response.headers.get('x-request-id');
      await response.text();
      // The log line is written when the response closes, after the client has the body: wait for it.
      const logged = () => gw.logLines.find((l) => l.message === 'request' && l.request_id === requestId);
      while (!logged()) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(logged()).to.include({ input_tokens: 135, output_tokens: 12, stream: true, status: 200 });
    });

    it('an upstream error event mid-stream surfaces as an error in the client, after the partial content', async () => {
      gw.upstream.setHandler(streamFixture('error-mid-stream'));
      const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
      let content = '';
      const error = await (async () => {
        for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
      })().catch((err: unknown) => err);
      expect(content).to.equal('Partial ánswer');
      expect(error).to.be.instanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).message).to.include('Overloaded');
      expect((error as InstanceType<typeof OpenAI.APIError>).type).to.equal('server_error');
    });

    it('an error mid-stream ends the wire with an error record and no [DONE]', async () => {
      gw.upstream.setHandler(streamFixture('error-mid-stream'));
      const response = await post({ stream: true });
      expect(response.status).to.equal(200);
      const records = dataRecords(await response.text());
      expect(records).not.to.include('[DONE]');
      expect(JSON.parse(records[records.length - 1])).to.deep.equal({ error: { message: 'Overloaded', type: 'server_error', param: null, code: 'server_error' } });
    });

    it('a connection lost mid-stream surfaces as an error in the client', async () => {
      gw.upstream.setHandler(() => ({ kind: 'stream', events: [...fixtureStreamEvents('truncated'), { pauseMs: 50 }], destroyAtEnd: true }));
      const stream = await client.chat.completions.create({ model: 'sonnet', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
      const error = await (async () => {
        for await (const _chunk of stream) { /* drain */ }
      })().catch((err: unknown) => err);
      expect(error).to.be.instanceOf(OpenAI.APIError);
      expect((error as Error).message).to.match(/lost mid-stream|ended before the reply was complete/);
    });

    const firstEventErrors: Array<[string, number, abstract new (...args: any[]) => Error]> = [
      ['overloaded_error', 503, OpenAI.InternalServerError],
      ['rate_limit_error', 429, OpenAI.RateLimitError],
      ['api_error', 500, OpenAI.InternalServerError],
    ];
    for (const [type, status, errorClass] of firstEventErrors) {
      it(`an upstream ${type} event before any output becomes HTTP ${status}`, async () => {
        gw.upstream.setHandler(() => ({
          kind: 'stream',
          events: [{ event: 'ping', data: { type: 'ping' } }, { event: 'error', data: { type: 'error', error: { type, message: `upstream ${type}` } } }],
        }));
        const error = await client.chat.completions
          .create({ model: 'sonnet', stream: true, messages: [{ role: 'user', content: 'Hi' }] })
          .catch((err: unknown) => err);
        expect(error).to.be.instanceOf(errorClass);
        expect((error as InstanceType<typeof OpenAI.APIError>).status).to.equal(status);
        expect((error as InstanceType<typeof OpenAI.APIError>).message).to.include(`upstream ${type}`);
      });
    }

    it('an upstream that closes a 200 stream before any event gives 502', async () => {
      gw.upstream.setHandler(() => ({ kind: 'stream', events: [] }));
      const response = await post({ stream: true });
      expect(response.status).to.equal(502);
      expect(((await response.json()) as any).error).to.include({ type: 'server_error' });
    });
  });

  describe('upstream HTTP errors', () => {
    it('429 keeps its status, retry-after and the chat error shape', async () => {
      // retry-after beyond the 20 s the gateway waits to retry (upstream.maxRetryAfterMs): it answers at once.
      gw.upstream.setHandler(() => ({
        kind: 'json', status: 429, headers: { 'retry-after': '30' },
        body: { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } },
      }));
      const error = (await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error).to.be.instanceOf(OpenAI.RateLimitError);
      expect(error.code).to.equal('rate_limit_exceeded');
      expect(error.headers?.get('retry-after')).to.equal('30');
    });

    it('529 overloaded becomes 503 for streaming requests too', async () => {
      gw.upstream.setHandler(() => ({ kind: 'json', status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
      const response = await post({ stream: true });
      expect(response.status).to.equal(503);
      expect(await response.json()).to.deep.equal({ error: { message: 'Overloaded', type: 'server_error', param: null, code: 'server_error' } });
    });
  });

  describe('request fields', () => {
    beforeEach(() => gw.upstream.setHandler((request) => ({
      kind: 'json',
      body: {
        id: 'msg_1', type: 'message', role: 'assistant', model: request.body.model, content: [{ type: 'text', text: '{"ok":true}' }],
        stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 3 },
      },
    })));

    it('an image part (data URL and https URL) reaches the upstream as image blocks', async () => {
      await client.chat.completions.create({
        model: 'sonnet',
        messages: [{
          role: 'user',
          content: [
            { type: 'text', text: 'Compare these.' },
            { type: 'image_url', image_url: { url: PNG_DATA_URL, detail: 'low' } },
            { type: 'image_url', image_url: { url: 'https://example.test/cat.jpg' } },
          ],
        }],
      });
      expect(gw.upstream.requests[0].body.messages[0].content).to.deep.equal([
        { type: 'text', text: 'Compare these.' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_DATA_URL.split(',')[1] } },
        { type: 'image', source: { type: 'url', url: 'https://example.test/cat.jpg' } },
      ]);
    });

    it('an audio part gets a 400 naming the part', async () => {
      const error = (await client.chat.completions
        .create({ model: 'sonnet', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] })
        .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error).to.be.instanceOf(OpenAI.BadRequestError);
      expect(error.param).to.equal('messages[0].content[0]');
      expect(error.message).to.include('input_audio');
    });

    it('clamps the temperature and says so in x-gateway-warning', async () => {
      const { response } = await client.chat.completions
        .create({ model: 'sonnet', temperature: 1.5, messages: [{ role: 'user', content: 'Hi' }] })
        .withResponse();
      expect(response.headers.get('x-gateway-warning')).to.equal('temperature 1.5 clamped to 1 (native range is 0 to 1)');
      expect(gw.upstream.requests[0].body.temperature).to.equal(1);
    });

    it('n > 1 is a 400 on n', async () => {
      const error = (await client.chat.completions.create({ model: 'sonnet', n: 2, messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
      expect(error).to.be.instanceOf(OpenAI.BadRequestError);
      expect(error.param).to.equal('n');
      expect(gw.upstream.requests).to.have.length(0);
    });

    it('maps the other fields and accepts unknown ones', async () => {
      await post({
        max_completion_tokens: 321, stop: ['END', '  '], top_p: 0.5, user: 'user-42', stream_options: null,
        messages: [{ role: 'developer', content: 'Be terse.' }, { role: 'user', content: 'Hi' }, { role: 'system', content: 'No emoji.' }],
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { ok: { type: 'boolean' } } } } },
        logprobs: false, seed: 1, frequency_penalty: 0.1, metadata: { team: 'a' }, store: false, brand_new_field: [1, 2],
      }).then(async (response) => {
        expect(response.status).to.equal(200);
        expect(response.headers.get('x-gateway-warning')).to.include('response_format json_schema is best effort');
        expect(((await response.json()) as any).choices[0].message.content).to.equal('{"ok":true}');
      });
      const sent = gw.upstream.requests[0].body;
      expect(sent).to.include({ max_tokens: 321, top_p: 0.5 });
      expect(sent.stop_sequences).to.deep.equal(['END']);
      expect(sent.metadata).to.deep.equal({ user_id: 'user-42' });
      expect(sent.system).to.match(/^Be terse\.\nNo emoji\.\nRespond with a single JSON value named "answer" that conforms to this JSON Schema: \{"type":"object"/);
      for (const field of ['logprobs', 'seed', 'frequency_penalty', 'store', 'brand_new_field', 'response_format', 'n', 'user']) {
        expect(sent, field).not.to.have.property(field);
      }
    });

    it('malformed fields get a 400 naming the field, never a 500', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools[0].function.name'],
        [{ tool_choice: 'sometimes' }, 'tool_choice'],
        [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
        [{ messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages[0].content[0].text'],
        [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }, 'messages[0].content[0].image_url.url'],
        [{ response_format: { type: 'xml' } }, 'response_format.type'],
        [{ max_tokens: 0 }, 'max_tokens'],
        [{ tools: [{ type: 'custom', custom: { name: 'x' } }] }, 'tools[0].type'],
      ];
      for (const [body, param] of cases) {
        const response = await post(body);
        expect(response.status, JSON.stringify(body)).to.equal(400);
        expect(((await response.json()) as any).error.param, JSON.stringify(body)).to.equal(param);
      }
    });

    it('logs each unknown stop reason once', async () => {
      gw.upstream.setHandler(() => ({
        kind: 'json',
        body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'x', content: [{ type: 'text', text: 'x' }], stop_reason: 'novel_reason_17', usage: { input_tokens: 1, output_tokens: 1 } },
      }));
      for (let i = 0; i < 3; i++) {
        const completion = await client.chat.completions.create({ model: 'sonnet', messages: [{ role: 'user', content: 'Hi' }] });
        expect(completion.choices[0].finish_reason).to.equal('stop');
      }
      expect(gw.logLines.filter((line) => line.stop_reason === 'novel_reason_17')).to.have.length(1);
    });
  });
});
