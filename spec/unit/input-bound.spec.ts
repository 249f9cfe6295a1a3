/**
 * The input bound (lib/billing/input-bound.ts): what the gateway sends and what the upstream adds, one
 * function for every route and each batch request; and the tool-loop turn whose kept thinking is
 * loaded before the admission (middleware/kept-thinking.ts).
 */
import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { boundInput, contextWindowOf, describeInputBound, IMAGE_INPUT_TOKENS, type FileFacts } from '../../lib/billing/input-bound';
import { chatToolTurnId, responsesToolTurnId } from '../../middleware/kept-thinking';
import { batchWorstCase, priceWorstCase } from '../../lib/billing/worst-case';
import { testConfigObject } from '../helpers/gateway';

const reservation = { bytesPerInputToken: 1, overheadInputTokens: 1000, webSearchesPerRequest: 10, minOutputTokens: 16 };
const WINDOW = 200_000;
const bound = (body: unknown, files?: Map<string, FileFacts>, extra?: unknown) => boundInput(body, { bytes: 500, reservation, contextWindow: WINDOW, files, extra });
const image = { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } };

describe('the input bound', () => {
  it('is the bytes sent plus the overhead for a plain body', () => {
    const plain = bound({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.tokens).to.equal(1500);
    expect(describeInputBound(plain)).to.equal('input bound 1,500 tokens (1,500 for 500 bytes sent)');
  });

  it('counts image parts of every format, in tool results, stored items and nested documents', () => {
    const native = { messages: [{ role: 'user', content: [image, { type: 'tool_result', tool_use_id: 't', content: [image] }] }] };
    expect(bound(native).tokens).to.equal(1500 + 2 * IMAGE_INPUT_TOKENS);
    const chat = { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }] };
    expect(bound(chat).tokens).to.equal(1500 + IMAGE_INPUT_TOKENS);
    const stored = [{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: 'u' }] }];
    expect(bound({ input: 'more' }, undefined, stored).tokens).to.equal(1500 + IMAGE_INPUT_TOKENS);
    const document = { type: 'document', source: { type: 'content', content: [image, { type: 'text', text: 'x' }] } };
    expect(bound({ messages: [{ role: 'user', content: [document] }] }).tokens).to.equal(1500 + IMAGE_INPUT_TOKENS);
  });

  it('walks a body nested 20,000 levels deep without exhausting the stack', () => {
    let content: unknown = [image];
    for (let i = 0; i < 20_000; i += 1) content = [{ type: 'tool_result', tool_use_id: 't', content }];
    expect(bound({ messages: [{ role: 'user', content }] }).tokens).to.equal(1500 + IMAGE_INPUT_TOKENS);
  });

  it('bounds a file by what its pin knows: a text file its size, an image file an image, anything else the context window', () => {
    const files = new Map<string, FileFacts>([
      ['file_text', { sizeBytes: 150_000, mimeType: 'text/plain' }],
      ['file_png', { sizeBytes: 9_000_000, mimeType: 'image/png' }],
      ['file_pdf', { sizeBytes: 2_000, mimeType: 'application/pdf' }],
    ]);
    const doc = (id: string, type = 'document') => ({ type, source: { type: 'file', file_id: id } });
    const body = (id: string, type?: string) => ({ messages: [{ role: 'user', content: [doc(id, type)] }] });
    expect(bound(body('file_text'), files).tokens).to.equal(1500 + 150_000);
    expect(bound(body('file_png', 'image'), files).tokens).to.equal(1500 + IMAGE_INPUT_TOKENS);
    expect(bound(body('file_pdf'), files).tokens).to.equal(1500 + WINDOW);
    expect(bound(body('file_unknown'), files).tokens, 'a file of unknown size').to.equal(1500 + WINDOW);
    expect(bound({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_text' }] }] }, files).tokens, 'Responses input_file').to.equal(1500 + 150_000);
    expect(describeInputBound(bound(body('file_text'), files))).to.include('150,000 from file(s) file_text');
  });

  it('holds a PDF sent inline at the context window, in every format (its pages bill as text and an image each)', () => {
    const pdf = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } };
    expect(bound({ messages: [{ role: 'user', content: [pdf] }] }).tokens).to.equal(1500 + WINDOW);
    const plainText = { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'hello' } };
    expect(bound({ messages: [{ role: 'user', content: [plainText] }] }).tokens, 'a plain-text document: its bytes').to.equal(1500);
    const responses = { input: [{ role: 'user', content: [{ type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' }] }] };
    expect(bound(responses).tokens).to.equal(1500 + WINDOW);
    const chat = { messages: [{ role: 'user', content: [{ type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } }] }] };
    expect(bound(chat).tokens).to.equal(1500 + WINDOW);
    expect(describeInputBound(bound(chat))).to.include('200,000 for 1 PDF(s) sent inline');
  });

  it('holds a document fetched from a URL at the context window', () => {
    const fetched = { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } };
    expect(bound({ messages: [{ role: 'user', content: [fetched] }] }).tokens).to.equal(1500 + WINDOW);
  });

  it('holds the context window for each sampling step a server tool can cause: max_uses, else the default', () => {
    const search = bound({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }] });
    expect(search.tokens).to.equal(1500 + 2 * WINDOW);
    expect(describeInputBound(search)).to.include('400,000 for web_search results (2 use(s) x the 200,000-token context window)');
    expect(bound({ tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }).tokens).to.equal(1500 + 10 * WINDOW);
    expect(bound({ tools: [{ type: 'code_execution_20250825', name: 'code_execution' }, { name: 'Bash', input_schema: {} }] }).tokens).to.equal(1500 + 10 * WINDOW);
    expect(bound({ mcp_servers: [{ type: 'url', url: 'https://x', name: 'x' }] }).tokens).to.equal(1500 + 10 * WINDOW);
    expect(bound({ tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 0 }] }).tokens).to.equal(1500);
  });

  it('takes the model\'s context window, the 1M window when the request asks for it', () => {
    const catalogue = createCatalogue(parseConfig(testConfigObject('http://127.0.0.1:9'), {}));
    const haiku = catalogue.resolve('model-haiku-4.5')!;
    // Figures, not the implementation restated: the shipped catalogue gives Haiku 4.5 a 200k window.
    expect(haiku.capabilities?.contextWindow).to.equal(200_000);
    expect(contextWindowOf(haiku)).to.equal(200_000);
    expect(contextWindowOf(haiku, true)).to.equal(1_000_000);
    const { capabilities: _dropped, ...unknownWindow } = haiku;
    expect(contextWindowOf(unknownWindow)).to.equal(1_000_000);
    const wider = { ...haiku, capabilities: { ...haiku.capabilities!, contextWindow: 2_000_000 } };
    expect(contextWindowOf(wider, true)).to.equal(2_000_000);
  });

  it('holds a batch request\'s image parts and files as a single request\'s (Medium 8)', () => {
    const catalogue = createCatalogue(parseConfig(testConfigObject('http://127.0.0.1:9'), {}));
    const haiku = catalogue.resolve('model-haiku-4.5')!;
    const plain = { model: 'haiku', max_tokens: 10, messages: [{ role: 'user', content: [image] }] };
    const worst = batchWorstCase(haiku, plain, 4096, reservation);
    const tokens = Buffer.byteLength(JSON.stringify(plain)) + 1000 + IMAGE_INPUT_TOKENS;
    expect(worst.input.tokens).to.equal(tokens);
    expect(worst.credits).to.be.closeTo(priceWorstCase(haiku, tokens, 10) / 2, 1e-12);
  });
});

describe('the tool-loop turn whose kept thinking is loaded before the admission', () => {
  it('chat: the first tool call of the last assistant turn answered by tool messages, unless it carries thinking_blocks', () => {
    const call = (id: string) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } });
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, tool_calls: [call('call:1'), call('call_2')] },
      { role: 'tool', tool_call_id: 'call:1', content: 'a' },
      { role: 'tool', tool_call_id: 'call_2', content: 'b' },
    ];
    expect(chatToolTurnId(messages)).to.equal('call_1');
    expect(chatToolTurnId(messages.slice(0, 2)), 'no tool result yet').to.equal(undefined);
    expect(chatToolTurnId([messages[0], { ...messages[1], thinking_blocks: [{ type: 'thinking', thinking: 't', signature: 's' }] }, messages[2]])).to.equal(undefined);
    expect(chatToolTurnId('x')).to.equal(undefined);
  });

  it('Responses: the first call of the last assistant run followed by output, unless its reasoning is signed', () => {
    const items = [
      { role: 'user', content: 'hi' },
      { type: 'reasoning', summary: [] },
      { type: 'function_call', call_id: 'call_a', name: 'f', arguments: '{}' },
      { type: 'function_call', call_id: 'call_b', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_a', output: 'x' },
      { type: 'function_call_output', call_id: 'call_b', output: 'y' },
    ];
    expect(responsesToolTurnId(items)).to.equal('call_a');
    expect(responsesToolTurnId(items.slice(0, 4))).to.equal(undefined);
    expect(responsesToolTurnId([items[0], { type: 'reasoning', summary: [], encrypted_content: 'e' }, ...items.slice(2)])).to.equal(undefined);
  });
});
