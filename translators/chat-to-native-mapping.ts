/**
 * Reverse mapping tables (chat-completions upstream -> native client): finish reason -> stop reason,
 * chat usage -> native usage. Source: wire-formats.md §8.4 (right-hand table), §8.5 read backwards.
 */
import type { NativeTokenCounts } from './usage';

const STOP_REASONS: Record<string, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

/** The native stop reason for a chat finish reason; unknown or null values map to `end_turn`. */
export function mapFinishReasonToStopReason(finishReason: string | null | undefined): string {
  return finishReason && Object.prototype.hasOwnProperty.call(STOP_REASONS, finishReason) ? STOP_REASONS[finishReason] : 'end_turn';
}

/** Chat usage as an upstream reports it; every field may be missing. */
export interface ReportedChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
}

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0);

/**
 * Native usage of a chat usage object. Cached (read) and cache-write tokens are subsets of
 * `prompt_tokens` in chat semantics, so the native `input_tokens` is what remains:
 * input = prompt - cached - cache writes; cache_read = cached; cache_creation = cache writes;
 * output = completion.
 */
export function convertChatUsageToNative(usage: ReportedChatUsage | null | undefined): NativeTokenCounts {
  const result: NativeTokenCounts = { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (!usage || typeof usage !== 'object') return result;
  const cached = count(usage.prompt_tokens_details?.cached_tokens);
  const written = count(usage.prompt_tokens_details?.cache_write_tokens);
  result.cache_read_input_tokens = cached;
  result.cache_creation_input_tokens = written;
  result.input_tokens = Math.max(0, count(usage.prompt_tokens) - cached - written);
  result.output_tokens = count(usage.completion_tokens);
  return result;
}

/** Native error type for a status of a chat-completions upstream (wire-formats.md §4, §7). */
export function mapStatusToNativeErrorType(status: number): string {
  const byStatus: Record<number, string> = {
    400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error',
    404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 503: 'overloaded_error',
    504: 'timeout_error', 529: 'overloaded_error',
  };
  return byStatus[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** Native error type for a chat `error.type` / `error.code` seen inside a stream. */
export function mapChatErrorTypeToNative(type: string | null | undefined, code: string | null | undefined): string {
  if (code === 'rate_limit_exceeded' || type === 'requests' || type === 'tokens') return 'rate_limit_error';
  if (code === 'insufficient_quota' || type === 'insufficient_quota') return 'billing_error';
  if (type === 'invalid_request_error') return 'invalid_request_error';
  return 'api_error';
}

/**
 * The HTTP status of a native stream error that ends the reply before any byte went out (the client
 * then gets a real status): a rate limit is a 429, a bad request a 400, anything else a 502 whose
 * type is `api_error`.
 */
export function convertStreamErrorToNativeReply(error: { type: string; message: string }): { status: number; body: { type: 'error'; error: { type: string; message: string } } } {
  const status = error.type === 'rate_limit_error' ? 429 : error.type === 'invalid_request_error' ? 400 : 502;
  return { status, body: { type: 'error', error: { type: status === 502 ? 'api_error' : error.type, message: error.message } } };
}

/**
 * A chat-completions error reply as a native error reply: same status, native body
 * `{type: "error", error: {type, message}}` with the upstream's message (or a generic one).
 */
export function convertChatErrorToNative(status: number, body: unknown): { status: number; body: { type: 'error'; error: { type: string; message: string } } } {
  const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message;
  return {
    status,
    body: {
      type: 'error',
      error: { type: mapStatusToNativeErrorType(status), message: typeof message === 'string' && message ? message : `the upstream answered HTTP ${status}` },
    },
  };
}
