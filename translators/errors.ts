/**
 * Upstream native errors -> chat-completions errors (status, body, headers).
 * Source: wire-formats.md §4 (native errors) and §8.7 (translation table).
 */
import type { ChatErrorBody } from './chat-types';
import type { NativeErrorBody } from './native-types';

export interface TranslatedError {
  status: number;
  body: ChatErrorBody;
  headers: Record<string, string>;
}

const CHAT_ERRORS: Record<string, { type: string; code: string | null; status?: number; headers?: Record<string, string> }> = {
  invalid_request_error: { type: 'invalid_request_error', code: null },
  authentication_error: { type: 'invalid_request_error', code: 'invalid_api_key' },
  billing_error: { type: 'insufficient_quota', code: 'insufficient_quota' },
  permission_error: { type: 'permission_error', code: 'permission_error' },
  not_found_error: { type: 'invalid_request_error', code: 'not_found' },
  request_too_large: { type: 'invalid_request_error', code: 'request_too_large' },
  rate_limit_error: { type: 'requests', code: 'rate_limit_exceeded' },
  api_error: { type: 'server_error', code: 'server_error' },
  timeout_error: { type: 'server_error', code: 'server_error' },
  overloaded_error: { type: 'server_error', code: 'server_error', status: 503 },
};

/**
 * Map an upstream error (HTTP status and, when readable, its native body) to the chat shape.
 * Unreadable bodies keep the status with a generic message.
 */
export function mapNativeErrorToChat(status: number, body: NativeErrorBody | unknown): TranslatedError {
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
    headers: mapped.headers ?? {},
  };
}
