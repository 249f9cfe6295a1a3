/**
 * Native SSE events -> chat-completions chunks, one stateful transform per request.
 * Source: wire-formats.md §3 (native stream grammar) and §8.6 (mapping); chunk order per the spec's
 * Events section: role chunk, content / tool-call chunks, final chunk with finish_reason, [DONE].
 *
 * The transform is pure (events in, records out): it never buffers, so the caller can write each
 * record in the tick its upstream event was parsed.
 */
import type { ChatChunkDelta, ChatCompletionChunk, ChatErrorBody, ChatThinkingBlock } from './chat-types';
import { eventHandlers, StreamTransformBase } from './stream-base';
import type { StreamTransform, WholeReply } from './stream-transform';
import { toChatId } from './native-to-chat-response';
import { mapNativeErrorToChat, mapStreamErrorToChat } from './native-to-chat-errors';
import { mapStopReason, type FinishReason } from './stop-reason';
import { convertUsageToChat, readThinkingTokenCount } from './usage';

/** What the transform asks the caller to write: a chunk, an in-stream error record, or the terminator. */
export type ChatStreamRecord = ChatCompletionChunk | ChatErrorBody | '[DONE]';

export interface ChatStreamOptions {
  /** Canonical model ID reported in every chunk. */
  model: string;
  /** `created` of every chunk, unix seconds. */
  created: number;
  /** `stream_options.include_usage`: `"usage": null` on every chunk, then one last chunk with empty `choices` and the usage. */
  includeUsage: boolean;
  onUnknownStopReason?: (value: string) => void;
}

/** The transform of one streamed reply; closed by `[DONE]` or an error record (never `[DONE]` after an error). */
export interface ChatStreamTransform extends StreamTransform<ChatStreamRecord> {
  /** The reply's complete thinking blocks so far, signed, in order. */
  readonly thinkingBlocks: readonly ChatThinkingBlock[];
  /** The ids of the reply's tool calls so far, in order. */
  readonly toolCallIds: readonly string[];
}

/** Status of failures of the stream itself (lost connection, unreadable event): a bad gateway. */
const BROKEN_STREAM_STATUS = 502;

/** Create the transform for one streamed reply. */
export function createChatStreamTransform(options: ChatStreamOptions): ChatStreamTransform {
  return new ChatStream(options);
}

/** The chat transform on the stream base (stream-base.ts): one handler per native event type. */
class ChatStream extends StreamTransformBase<ChatStreamRecord> implements ChatStreamTransform {
  declare error: WholeReply<ChatErrorBody> | undefined;
  readonly toolCallIds: string[] = [];
  readonly thinkingBlocks: ChatThinkingBlock[] = [];
  private id = toChatId(undefined);
  private started = false;
  private finished = false;
  private readonly usageField: { usage?: null };
  /** Native block index -> tool_calls index, for tool_use blocks only (dense, from 0, in order of appearance). */
  private readonly toolIndexes = new Map<number, number>();
  /** Native block index -> the thinking block being streamed there. */
  private readonly openThinking = new Map<number, { thinking: string; signature: string }>();
  private thinkingTokens: number | undefined;
  /** How this stream's delta chunks are written (serializeChatStreamRecord): made with the first one, again if the id changes. */
  private deltaLayout: DeltaLayout | undefined;

  constructor(private readonly options: ChatStreamOptions) {
    super();
    this.usageField = options.includeUsage ? { usage: null } : {};
  }

  protected readonly handlers = eventHandlers<ChatStreamRecord>({
    message_start: (data) => {
      if (this.started) return [];
      this.started = true;
      if (typeof data?.message?.id === 'string') this.id = toChatId(data.message.id);
      this.mergeUsage(data?.message?.usage, false);
      return [this.chunk({ role: 'assistant', content: '' })];
    },
    content_block_start: (data) => {
      const block = data?.content_block;
      if (block?.type === 'tool_use' && typeof data.index === 'number') {
        const index = this.toolIndexes.size;
        this.toolIndexes.set(data.index, index);
        this.toolCallIds.push(String(block.id));
        return [this.chunk({ tool_calls: [{ index, id: String(block.id), type: 'function', function: { name: String(block.name), arguments: '' } }] })];
      }
      if (block?.type === 'text' && typeof block.text === 'string' && block.text !== '') {
        this.streamedCharacters += block.text.length;
        return [this.chunk({ content: block.text })];
      }
      if (block?.type === 'thinking' && typeof data.index === 'number') {
        this.openThinking.set(data.index, { thinking: String(block.thinking ?? ''), signature: String(block.signature ?? '') });
        return block.thinking ? [this.chunk({ reasoning_content: String(block.thinking) })] : [];
      }
      if (block?.type === 'redacted_thinking' && typeof block.data === 'string') {
        const redacted: ChatThinkingBlock = { type: 'redacted_thinking', data: block.data };
        this.thinkingBlocks.push(redacted);
        return [this.chunk({ thinking_blocks: [redacted] })];
      }
      return []; // server-tool blocks are not sent
    },
    content_block_stop: (data) => {
      const open = this.openThinking.get(data?.index);
      if (!open) return [];
      this.openThinking.delete(data.index);
      // The signed block goes out whole once its signature_delta has come (it precedes this stop).
      const block: ChatThinkingBlock = { type: 'thinking', thinking: open.thinking, signature: open.signature };
      this.thinkingBlocks.push(block);
      return [this.chunk({ thinking_blocks: [block] })];
    },
    content_block_delta: (data) => {
      const delta = data?.delta;
      if (delta?.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '') {
        this.streamedCharacters += delta.text.length;
        return [this.deltaChunk({ content: delta.text })];
      }
      if (delta?.type === 'input_json_delta' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
        const index = this.toolIndexes.get(data.index);
        if (index === undefined) return [];
        this.streamedCharacters += delta.partial_json.length;
        return [this.deltaChunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] })];
      }
      const open = this.openThinking.get(data?.index);
      if (open && delta?.type === 'thinking_delta' && typeof delta.thinking === 'string' && delta.thinking !== '') {
        open.thinking += delta.thinking;
        return [this.deltaChunk({ reasoning_content: delta.thinking })];
      }
      if (open && delta?.type === 'signature_delta' && typeof delta.signature === 'string') open.signature += delta.signature;
      return []; // citations_delta
    },
    message_delta: (data) => {
      this.mergeUsage(data?.usage, true);
      this.thinkingTokens = readThinkingTokenCount(data?.usage) ?? this.thinkingTokens;
      const reason = data?.delta?.stop_reason;
      if (typeof reason !== 'string') return [];
      this.stopReason = reason;
      return this.finish(mapStopReason(reason, this.options.onUnknownStopReason));
    },
    message_stop: () => {
      const records = this.finish('stop');
      this.closed = true;
      if (this.options.includeUsage) {
        records.push({
          id: this.id, object: 'chat.completion.chunk', created: this.options.created, model: this.options.model, choices: [],
          usage: convertUsageToChat(this.usage, this.thinkingTokens),
        });
      }
      records.push('[DONE]');
      return records;
    },
    error: (data) => this.closeWith(() => this.errorRecords(mapStreamErrorToChat(data))),
  });

  /** A broken stream: the 502 error record (never `[DONE]` after it). */
  protected failure(message: string): ChatStreamRecord[] {
    return this.errorRecords(mapNativeErrorToChat(BROKEN_STREAM_STATUS, { type: 'error', error: { type: 'api_error', message } }));
  }

  /** The record of the error that closes the stream, kept as `error` for a failure before any byte went out. */
  private errorRecords(translated: WholeReply<ChatErrorBody>): ChatStreamRecord[] {
    this.error = translated;
    return [translated.body];
  }

  private chunk(delta: ChatChunkDelta, finish: FinishReason | null = null): ChatCompletionChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.options.created,
      model: this.options.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...this.usageField,
    };
  }

  /** A delta's chunk (text, reasoning or a tool call's arguments), carrying its stream's layout (serializeChatStreamRecord). */
  private deltaChunk(delta: DeltaChunkDelta): ChatCompletionChunk {
    const { options } = this;
    if (this.deltaLayout === undefined || this.deltaLayout.id !== this.id) this.deltaLayout = createDeltaLayout(this.id, options);
    return new DeltaChunk(this.deltaLayout, this.id, options.created, options.model, delta, options.includeUsage);
  }

  private finish(reason: FinishReason): ChatStreamRecord[] {
    if (this.finished) return [];
    this.finished = true;
    return [this.chunk({}, reason)];
  }
}

/** The JSON text around a stream's delta chunks: up to the delta (the id it was made for) and after it. */
interface DeltaLayout {
  id: string;
  head: string;
  tail: string;
}

/** The layout of one stream's delta chunks, made for the chunk `id`. */
function createDeltaLayout(id: string, options: ChatStreamOptions): DeltaLayout {
  const head = `{"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${JSON.stringify(options.created)},"model":${JSON.stringify(options.model)},"choices":[{"index":0,"delta":`;
  const tail = options.includeUsage ? ',"logprobs":null,"finish_reason":null}],"usage":null}' : ',"logprobs":null,"finish_reason":null}]}';
  return { id, head, tail };
}

/** The deltas a {@link DeltaChunk} carries: a text delta's, a thinking delta's, an input JSON delta's. */
type DeltaChunkDelta =
  | { content: string }
  | { reasoning_content: string }
  | { tool_calls: [{ index: number; function: { arguments: string } }] };

/**
 * A chunk made for a native text, thinking or input JSON delta: the members of any chunk, in the order
 * `JSON.stringify` writes them, and its stream's layout in a private field, which `JSON.stringify`,
 * `Object.keys` and deep equality never see.
 */
class DeltaChunk implements ChatCompletionChunk {
  readonly #layout: DeltaLayout;
  readonly id: string;
  readonly object = 'chat.completion.chunk' as const;
  readonly created: number;
  readonly model: string;
  readonly choices: ChatCompletionChunk['choices'];
  declare readonly usage?: null;

  constructor(layout: DeltaLayout, id: string, created: number, model: string, delta: DeltaChunkDelta, includeUsage: boolean) {
    this.#layout = layout;
    this.id = id;
    this.created = created;
    this.model = model;
    this.choices = [{ index: 0, delta, logprobs: null, finish_reason: null }];
    if (includeUsage) this.usage = null;
  }

  /** The chunk's JSON, byte for byte what `JSON.stringify(this)` gives: its layout's head, its delta's JSON and the tail. */
  json(): string {
    const delta = this.choices[0].delta as DeltaChunkDelta;
    let json: string;
    if ('content' in delta) json = `{"content":${JSON.stringify(delta.content)}}`;
    else if ('reasoning_content' in delta) json = `{"reasoning_content":${JSON.stringify(delta.reasoning_content)}}`;
    else json = `{"tool_calls":[{"index":${delta.tool_calls[0].index},"function":{"arguments":${JSON.stringify(delta.tool_calls[0].function.arguments)}}}]}`;
    return `${this.#layout.head}${json}${this.#layout.tail}`;
  }
}

/**
 * A stream record as the JSON text of its `data:` line: `[DONE]` as it is, anything else as
 * `JSON.stringify` writes it. Kept for speed (RESULTS.md, "Mechanisms kept for speed": the plain string
 * template, which writes the id and model again for every chunk, cost 2.3 x as much per 200-delta
 * stream): a chunk the transform made for a text, thinking or input JSON delta (a DeltaChunk, its
 * stream's layout in a private field; records are never changed once made) is written as that head,
 * its delta's JSON and the tail. A property test checks it against the plain template and JSON.stringify.
 */
export function serializeChatStreamRecord(record: ChatStreamRecord): string {
  if (record === '[DONE]') return record;
  return record instanceof DeltaChunk ? record.json() : JSON.stringify(record);
}
