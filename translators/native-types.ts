/**
 * Types of the native messages format, as far as the gateway reads and builds it: the one module of
 * the native wire types every translator and route imports. Names follow the Messages API reference
 * (`Message`, `MessageParam`, `Usage`, `Tool`, `ToolChoice`). Source: docs/wire-formats.md §1-§4
 * (anthropic-sdk-typescript `messages.ts`).
 */
import type { NativeThinking } from './model-capabilities';
import type { CacheControl } from './prompt-cache';

export interface NativeTextBlock { type: 'text'; text: string }
export interface NativeToolUseBlock { type: 'tool_use'; id: string; name: string; input: unknown }
/** Image source: inline base64 (jpeg, png, gif, webp) or a URL the upstream fetches (§1.2). */
export type NativeImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };
export interface NativeImageBlock { type: 'image'; source: NativeImageSource }
/** A document (PDF) block; the gateway only produces base64 PDF sources. */
export interface NativeDocumentBlock { type: 'document'; source: { type: 'base64'; media_type: 'application/pdf'; data: string } }
export interface NativeToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  /** Omitted when the tool answered nothing. */
  content?: string | NativeTextBlock[];
}
/** Any content block; unknown types are passed through untouched. */
export type NativeContentBlock =
  | NativeTextBlock
  | NativeToolUseBlock
  | NativeImageBlock
  | NativeDocumentBlock
  | NativeToolResultBlock
  | { type: string; [field: string]: unknown };

/** A server tool the upstream runs itself (web search, ...), passed by `type` (§1.3). */
export interface NativeServerTool {
  type: string;
  name: string;
  [field: string]: unknown;
}

/** A client tool definition (§1.3). */
export interface NativeTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

/** `tool_choice` (§1.3). */
export type NativeToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

export interface NativeMessageParam {
  role: 'user' | 'assistant' | 'system';
  content: string | NativeContentBlock[];
}

/**
 * `POST /v1/messages` body, as a client sends it or a translator builds it. Fields not listed pass
 * through unchanged.
 */
export interface NativeMessagesRequest {
  model: string;
  max_tokens: number;
  messages: NativeMessageParam[];
  /** A string, or text blocks (one may carry a cache breakpoint, prompt-cache.ts). */
  system?: string | Array<NativeTextBlock & { cache_control?: CacheControl }>;
  stream?: boolean;
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
  tools?: Array<NativeTool | NativeServerTool>;
  tool_choice?: NativeToolChoice;
  thinking?: NativeThinking;
  /** `effort` of adaptive thinking (wire-formats.md §1.1). */
  output_config?: { effort?: string; [field: string]: unknown };
  [field: string]: unknown;
}

/** Usage as the upstream reports it (wire-formats.md §2.2); cache fields may be null or absent. */
export interface NativeUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** The cache writes split by lifetime. */
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null;
  /** Server tools the upstream ran for this reply. */
  server_tool_use?: { web_search_requests?: number | null; [tool: string]: unknown } | null;
  /** The thinking share of `output_tokens`, when the upstream reports it. */
  output_tokens_details?: { thinking_tokens?: number | null } | null;
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

/** One parsed SSE event of an upstream stream: its `event:` name (undefined when absent) and its `data:` text. */
export interface SseEvent {
  event?: string;
  data: string;
}

/** Native error body (wire-formats.md §4). */
export interface NativeErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}
