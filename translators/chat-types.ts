/**
 * Types of the chat-completions format, as far as the gateway reads and writes it.
 * Source: docs/wire-formats.md §5-§7 (openai-node `chat/completions.ts`).
 */
import type { ChatUsage } from './usage';
import type { FinishReason } from './stop-reason';

export interface ChatTextPart { type: 'text'; text: string }
export interface ChatImagePart { type: 'image_url'; image_url: { url: string; detail?: string } }
export interface ChatFilePart { type: 'file'; file: { file_data?: string; file_id?: string; filename?: string } }
/** A content part; parts other than text, image_url and file are rejected where they cannot be taken. */
export type ChatContentPart = ChatTextPart | ChatImagePart | ChatFilePart | { type: string; [field: string]: unknown };

/** A tool call as the client sends it back in an assistant message (or as the gateway replies it). */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * A signed thinking block as chat-compatible gateways carry it (LiteLLM's `thinking_blocks`): the
 * native block, byte for byte, so a client that sends the assistant message back returns it intact.
 */
export type ChatThinkingBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

export interface ChatMessage {
  role: string;
  /** Assistant messages: the model's thinking, as the gateway replied it (restored before tool_use). */
  thinking_blocks?: ChatThinkingBlock[] | null;
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_calls?: ChatToolCall[];
  /** `tool` messages: id of the call this message answers. */
  tool_call_id?: string;
  /** Deprecated single call of `assistant` messages. */
  function_call?: { name: string; arguments: string } | null;
  [field: string]: unknown;
}

/** A tool definition; only `type: "function"` exists natively. */
export interface ChatTool {
  type: string;
  function?: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
  [field: string]: unknown;
}

export type ChatToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; function: { name: string } }
  | { type: 'allowed_tools'; allowed_tools: { mode: 'auto' | 'required'; tools: Array<{ type: string; function?: { name: string } }> } }
  | { type: string; [field: string]: unknown };

export type ChatResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/** `POST /v1/chat/completions` body. Unknown fields are accepted and ignored (compatibility rule 2). */
export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  n?: number | null;
  user?: string;
  stream_options?: { include_usage?: boolean } | null;
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean | null;
  response_format?: ChatResponseFormat | null;
  /** `none`, `minimal`, `low`, `medium`, `high`, `xhigh` (and `max` on some clients). */
  reasoning_effort?: string | null;
  /** Not in the chat format; some clients send it as an extra body field. */
  top_k?: number | null;
  [field: string]: unknown;
}

/** Non-streaming reply, `object: "chat.completion"`. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      refusal: null;
      tool_calls?: ChatToolCall[];
      /** The model's thinking text (what chat clients show as reasoning). */
      reasoning_content?: string;
      /** The signed thinking blocks, to send back with the message. */
      thinking_blocks?: ChatThinkingBlock[];
    };
    logprobs: null;
    finish_reason: FinishReason;
  }>;
  usage: ChatUsage;
}

/** One tool-call fragment of a streamed delta; the first for an `index` carries id, type and name. */
export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatChunkDelta {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: ChatToolCallDelta[];
  /** Thinking text as it streams. */
  reasoning_content?: string;
  /** A thinking block once complete (with its signature), or a redacted one. */
  thinking_blocks?: ChatThinkingBlock[];
}

/** One streamed record, `object: "chat.completion.chunk"`. */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{ index: number; delta: ChatChunkDelta; logprobs: null; finish_reason: FinishReason | null }>;
  usage?: ChatUsage | null;
}

/** The chat error shape, also sent as an in-stream record. */
export interface ChatErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
