/**
 * Types of the chat-completions format, as far as the gateway reads and writes it.
 * Source: shared/reference/wire-formats.md §5-§7 (openai-node `chat/completions.ts`).
 */
import type { ChatUsage } from './usage';
import type { FinishReason } from './stop-reason';

export interface ChatTextPart { type: 'text'; text: string }
export type ChatContentPart = ChatTextPart | { type: string; [field: string]: unknown };

export interface ChatMessage {
  role: string;
  content?: string | ChatContentPart[] | null;
  name?: string;
  tool_calls?: unknown[];
  tool_call_id?: string;
  [field: string]: unknown;
}

/** `POST /v1/chat/completions` body. Unknown fields are accepted and ignored (compatibility rule 2). */
export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  n?: number | null;
  user?: string;
  stream_options?: { include_usage?: boolean } | null;
  [field: string]: unknown;
}

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Non-streaming reply, `object: "chat.completion"`. */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; refusal: null; tool_calls?: ChatToolCall[] };
    logprobs: null;
    finish_reason: FinishReason;
  }>;
  usage: ChatUsage;
}

export interface ChatChunkDelta {
  role?: 'assistant';
  content?: string | null;
  tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function: { name?: string; arguments: string } }>;
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
