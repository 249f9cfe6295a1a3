/**
 * Types of the Responses API (`POST /v1/responses`) as far as the gateway reads and writes it, the
 * native types the Responses translators produce, and their one error class.
 *
 * Sources: openai-node `src/resources/responses/responses.ts` (ResponseCreateParams, ResponseInputItem,
 * Response, ResponseStreamEvent; v6.49) and codex-rs `codex-api/src/sse/responses.rs` (the events a
 * Codex client reads); native shapes: docs/wire-formats.md §1-§3.
 *
 * These modules import nothing from lib/ or middleware/: they own their types and errors.
 */

export { TranslationError } from './translation-error';

// ---------------------------------------------------------------- Responses request

/** A content part of a `message` input item. */
export type ResponsesInputContent =
  | { type: 'input_text'; text: string }
  | { type: 'output_text'; text: string; annotations?: unknown[] }
  | { type: 'refusal'; refusal: string }
  | { type: 'input_image'; image_url?: string | null; file_id?: string | null; detail?: string }
  | { type: 'input_file'; file_data?: string; file_url?: string; file_id?: string | null; filename?: string }
  | { type: string; [field: string]: unknown };

export interface ResponsesMessageItem {
  type?: 'message';
  role: 'user' | 'assistant' | 'system' | 'developer';
  content: string | ResponsesInputContent[];
  id?: string;
  status?: string;
}

export interface ResponsesFunctionCallItem {
  type: 'function_call';
  call_id: string;
  name: string;
  /** A JSON string. */
  arguments: string;
  namespace?: string;
  id?: string;
  status?: string;
}

export interface ResponsesFunctionCallOutputItem {
  type: 'function_call_output';
  call_id: string;
  /** Text, or content parts (`input_text`, `input_image`, `input_file`). */
  output: string | ResponsesInputContent[];
  id?: string;
  status?: string;
}

export interface ResponsesCustomToolCallItem {
  type: 'custom_tool_call';
  call_id: string;
  name: string;
  input: string;
  namespace?: string;
  id?: string;
}

/**
 * Codex's shell call (openai-node `responses.ts` ResponseItem.LocalShellCall; codex-rs
 * `LocalShellAction::Exec`): the command as an argv list.
 */
export interface ResponsesLocalShellCallItem {
  type: 'local_shell_call';
  id: string;
  call_id: string;
  status: 'completed' | 'in_progress' | 'incomplete';
  action: { type: 'exec'; command: string[]; working_directory: string | null; timeout_ms: number | null; env: Record<string, string>; user: string | null };
}

export interface ResponsesCustomToolCallOutputItem {
  type: 'custom_tool_call_output';
  call_id: string;
  output: string | ResponsesInputContent[];
  id?: string;
}

export interface ResponsesSummaryText {
  type: 'summary_text';
  text: string;
}

export interface ResponsesReasoningItem {
  type: 'reasoning';
  id: string;
  summary: ResponsesSummaryText[];
  content?: Array<{ type: 'reasoning_text'; text: string }>;
  /** The gateway's encoding of the native thinking block (see responses-reasoning.ts); null when not asked for. */
  encrypted_content?: string | null;
  status?: string;
}

export interface ResponsesWebSearchCallItem {
  type: 'web_search_call';
  id: string;
  status: 'in_progress' | 'searching' | 'completed' | 'failed';
  action?: { type: 'search'; query?: string };
}

/** Any input item. Unknown types are refused (400) by the request translator. */
export type ResponsesInputItem =
  | ResponsesMessageItem
  | ResponsesFunctionCallItem
  | ResponsesFunctionCallOutputItem
  | ResponsesCustomToolCallItem
  | ResponsesCustomToolCallOutputItem
  | ResponsesReasoningItem
  | ResponsesWebSearchCallItem
  | { type: string; [field: string]: unknown };

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
}

export interface ResponsesCustomTool {
  type: 'custom';
  name: string;
  description?: string;
  format?: unknown;
}

export interface ResponsesNamespaceTool {
  type: 'namespace';
  name: string;
  description?: string;
  tools: Array<ResponsesFunctionTool | ResponsesCustomTool>;
}

export type ResponsesTool =
  | ResponsesFunctionTool
  | ResponsesCustomTool
  | ResponsesNamespaceTool
  | { type: 'web_search' | 'web_search_preview' | 'web_search_2025_08_26'; [field: string]: unknown }
  | { type: string; [field: string]: unknown };

export type ResponsesToolChoice =
  | 'none' | 'auto' | 'required'
  | { type: 'function' | 'custom'; name: string }
  | { type: 'allowed_tools'; mode: 'auto' | 'required'; tools: Array<{ type: string; name?: string }> }
  | { type: string; [field: string]: unknown };

export interface ResponsesTextFormat {
  type: 'text' | 'json_object' | 'json_schema';
  name?: string;
  description?: string;
  schema?: Record<string, unknown>;
  strict?: boolean | null;
}

/** `POST /v1/responses` body (the fields the gateway reads; others are ignored). */
export interface ResponsesRequest {
  model: string;
  input?: string | ResponsesInputItem[];
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  tools?: ResponsesTool[];
  tool_choice?: ResponsesToolChoice;
  parallel_tool_calls?: boolean | null;
  reasoning?: { effort?: string | null; summary?: string | null } | null;
  text?: { format?: ResponsesTextFormat; verbosity?: string } | null;
  include?: string[] | null;
  store?: boolean | null;
  stream?: boolean | null;
  previous_response_id?: string | null;
  metadata?: Record<string, string> | null;
  user?: string;
  safety_identifier?: string;
  prompt_cache_key?: string;
  truncation?: string | null;
  [field: string]: unknown;
}

// ---------------------------------------------------------------- Responses reply

export interface ResponsesOutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs: unknown[];
}

export interface ResponsesOutputMessage {
  type: 'message';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: ResponsesOutputText[];
}

export type ResponsesOutputItem =
  | ResponsesOutputMessage
  | (ResponsesFunctionCallItem & { id: string; status: string })
  | (ResponsesCustomToolCallItem & { id: string })
  | ResponsesLocalShellCallItem
  | ResponsesReasoningItem
  | ResponsesWebSearchCallItem;

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export interface ResponsesError {
  code: string;
  message: string;
}

/** The `response` object (`object: "response"`). */
export interface ResponsesResponse {
  id: string;
  object: 'response';
  created_at: number;
  status: 'completed' | 'incomplete' | 'in_progress' | 'failed';
  error: ResponsesError | null;
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: ResponsesOutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number | null;
  text: { format: ResponsesTextFormat };
  tool_choice: ResponsesToolChoice;
  tools: ResponsesTool[];
  top_p: number | null;
  truncation: string;
  usage: ResponsesUsage | null;
  user: string | null;
  metadata: Record<string, string>;
}

/** One outgoing stream event: its `type` is also its SSE `event:` name. */
export interface ResponsesStreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

/** What the stream transform asks the caller to write: one event. */
export type ResponsesStreamRecord = ResponsesStreamEvent;


/**
 * How native tool names map back to the client's tools: namespaced tools are sent as
 * `<namespace>__<name>`, custom (free-text) tools as a one-field `{input}` object.
 */
export interface ToolNameEntry {
  name: string;
  namespace?: string;
  kind: 'function' | 'custom' | 'local_shell';
}
export type ToolNameTable = ReadonlyMap<string, ToolNameEntry>;
