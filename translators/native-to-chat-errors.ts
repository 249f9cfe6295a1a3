/**
 * Upstream native errors -> chat-completions errors (status, body, headers).
 * Source: wire-formats.md §4 (native errors) and §8.7 (translation table).
 */
import type { ChatErrorBody } from './chat-types';
import type { NativeErrorBody } from './native-types';
import type { WholeReply } from './stream-transform';

/** HTTP status the upstream uses for each native error type (wire-formats.md §4). */
const NATIVE_ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  conflict_error: 409,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** Chat `type` and `code` per native type; `status` overrides the upstream's status (529 is not an HTTP status SDKs know). */
const CHAT_ERRORS: Record<string, { type: string; code: string | null; status?: number }> = {
  invalid_request_error: { type: 'invalid_request_error', code: null },
  authentication_error: { type: 'invalid_request_error', code: 'invalid_api_key' },
  billing_error: { type: 'insufficient_quota', code: 'insufficient_quota' },
  permission_error: { type: 'permission_error', code: 'permission_error' },
  not_found_error: { type: 'invalid_request_error', code: 'not_found' },
  conflict_error: { type: 'invalid_request_error', code: 'conflict' },
  request_too_large: { type: 'invalid_request_error', code: 'request_too_large' },
  rate_limit_error: { type: 'requests', code: 'rate_limit_exceeded' },
  api_error: { type: 'server_error', code: 'server_error' },
  timeout_error: { type: 'server_error', code: 'server_error' },
  overloaded_error: { type: 'server_error', code: 'server_error', status: 503 },
};

/**
 * The HTTP status of a native error type, for errors that arrive without one (an `event: error` in a
 * 200 stream). Unknown types count as `api_error` (500).
 */
export function mapNativeErrorTypeToStatus(nativeType: string | undefined): number {
  return (nativeType && NATIVE_ERROR_STATUS[nativeType]) || 500;
}

/**
 * Map an upstream error (HTTP status and, when readable, its native body) to the chat shape.
 * Unreadable bodies keep the status with a generic message. `billing_error` carries
 * `x-should-retry: false` so SDKs do not retry a permanent failure.
 */
export function mapNativeErrorToChat(status: number, body: NativeErrorBody | unknown): WholeReply<ChatErrorBody> {
  const error = (body as NativeErrorBody | undefined)?.error;
  const nativeType = typeof error?.type === 'string' ? error.type : undefined;
  const message = typeof error?.message === 'string' ? error.message : `the upstream answered with status ${status}`;
  const mapped = (nativeType && CHAT_ERRORS[nativeType]) || {
    type: status >= 500 ? 'server_error' : 'invalid_request_error',
    code: status >= 500 ? 'server_error' : null,
  };
  let code = mapped.code;
  if (nativeType === 'not_found_error' && /model/i.test(message)) code = 'model_not_found';
  if (nativeType === 'invalid_request_error' && /prompt is too long/i.test(message)) code = 'context_length_exceeded';
  return {
    status: mapped.status ?? status,
    body: { error: { message, type: mapped.type, param: null, code } },
    headers: nativeType === 'billing_error' ? { 'x-should-retry': 'false' } : {},
  };
}

/**
 * The chat error record that ends a stream the gateway could not finish (an upstream record that is
 * not JSON, a stream cut before `[DONE]`): a server error with code `upstream_error`.
 */
export function formatChatStreamFailure(message: string): ChatErrorBody {
  return { error: { message, type: 'server_error', param: null, code: 'upstream_error' } };
}

/**
 * Map the data of an upstream `event: error` (`{type: "error", error: {type, message}}`) to the chat
 * shape, with the status its native type stands for (overloaded_error -> 503, rate_limit_error -> 429,
 * api_error -> 500, ...).
 */
export function mapStreamErrorToChat(data: NativeErrorBody | unknown): WholeReply<ChatErrorBody> {
  const nativeType = (data as NativeErrorBody | undefined)?.error?.type;
  return mapNativeErrorToChat(mapNativeErrorTypeToStatus(typeof nativeType === 'string' ? nativeType : undefined), data);
}

/**
 * A native upstream's error reply (status, parsed body) for a client of an OpenAI-shaped route
 * (chat-completions, Responses): mapNativeErrorToChat's status (529 as 503) and chat error body, with
 * the upstream's `retry-after` passed on. A body that was not JSON (undefined) counts as no body.
 */
export function convertNativeErrorReply(status: number, body: unknown, retryAfter: string | string[] | undefined): WholeReply<ChatErrorBody> {
  const translated = mapNativeErrorToChat(status, body);
  if (typeof retryAfter === 'string') translated.headers = { 'retry-after': retryAfter, ...translated.headers };
  return translated;
}
