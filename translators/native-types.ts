/**
 * Types of the native messages format, as far as the gateway reads it.
 * Source: shared/reference/wire-formats.md §1-§4 (anthropic-sdk-typescript `messages.ts`).
 */

export interface NativeTextBlock { type: 'text'; text: string }
export interface NativeToolUseBlock { type: 'tool_use'; id: string; name: string; input: unknown }
/** Any content block; unknown types are passed through untouched. */
export type NativeContentBlock = NativeTextBlock | NativeToolUseBlock | { type: string; [field: string]: unknown };

export interface NativeMessageParam {
  role: 'user' | 'assistant';
  content: string | NativeContentBlock[];
}

/** `POST /v1/messages` body. Fields not listed pass through unchanged. */
export interface NativeMessagesRequest {
  model: string;
  max_tokens: number;
  messages: NativeMessageParam[];
  system?: string | NativeTextBlock[];
  stream?: boolean;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
  tools?: unknown[];
  tool_choice?: unknown;
  [field: string]: unknown;
}

/** Usage as the upstream reports it (wire-formats.md §2.2); cache fields may be null or absent. */
export interface NativeUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  [field: string]: unknown;
}

/** A non-streaming reply (wire-formats.md §2). */
export interface NativeMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: NativeContentBlock[];
  stop_reason: string | null;
  stop_sequence?: string | null;
  usage: NativeUsage;
}

/** Native error body (wire-formats.md §4). */
export interface NativeErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}
