/**
 * The native shapes the Responses translators produce and read (their own copies, so translators
 * import nothing from lib/). Source: docs/wire-formats.md §1 (request), §2 (reply), §2.2
 * (usage).
 */
import type { NativeThinking } from './model-capabilities';
import type { CacheControl } from './prompt-cache';

export interface NativeBlock {
  type: string;
  [field: string]: unknown;
}

export interface NativeTurn {
  role: 'user' | 'assistant';
  content: NativeBlock[];
}

export interface NativeToolDefinition {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export interface NativeServerTool {
  type: string;
  name: string;
  [field: string]: unknown;
}

export type NativeToolChoiceParam =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** The native `POST /v1/messages` body the request translator builds. */
export interface NativeRequest {
  model: string;
  max_tokens: number;
  messages: NativeTurn[];
  /** A string as converted; text blocks once a cache breakpoint marks it (prompt-cache.ts). */
  system?: string | Array<{ type: 'text'; text: string; cache_control?: CacheControl }>;
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  metadata?: { user_id: string };
  tools?: Array<NativeToolDefinition | NativeServerTool>;
  tool_choice?: NativeToolChoiceParam;
  thinking?: NativeThinking;
  /** `effort` of adaptive thinking (wire-formats.md §1.1). */
  output_config?: { effort?: string };
}

/** Native usage as reported (fields may be absent or null). */
export interface NativeUsageReport {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
  [field: string]: unknown;
}

/** A native non-streaming reply. */
export interface NativeReply {
  id: string;
  type: 'message';
  model: string;
  content: NativeBlock[];
  stop_reason: string | null;
  usage: NativeUsageReport;
}
