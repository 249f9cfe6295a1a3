/**
 * The one error class of the gateway and its two renderings (native and chat-completions shapes).
 *
 * Shapes: native `{type: "error", error: {type, message}}` (wire-formats.md §4);
 * chat `{error: {message, type, param, code}}` (wire-formats.md §7).
 */
import { TranslationError } from '../../translators/translation-error';
import { CloudCredentialError } from '../upstream/providers/provider';

/** Native error types (wire-formats.md §4, SDK `ErrorType`). */
export type NativeErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'timeout_error'
  | 'overloaded_error';

/** Which wire format a route speaks; decides the error shape. */
export type RouteFormat = 'native' | 'chat';

export interface GatewayErrorOptions {
  /** Chat `error.code`. Default: derived from the native type. */
  chatCode?: string;
  /** Chat `error.type`. Default: derived from the status. */
  chatType?: string;
  /** Chat `error.param`: the request field at fault, if any. */
  param?: string | null;
  /** Extra response headers (retry-after, ...). */
  headers?: Record<string, string>;
  /**
   * A line for the operator, which the error handler writes at error level with the request's
   * `request_id` (a store outage, say: the client sees only a 503).
   */
  log?: { message: string } & Record<string, unknown>;
}

/** An error the gateway answers with: HTTP status, native error type and chat error code. */
export class GatewayError extends Error {
  override name = 'GatewayError';
  readonly chatCode: string;
  readonly chatType: string;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly log?: { message: string } & Record<string, unknown>;

  constructor(
    readonly status: number,
    readonly nativeType: NativeErrorType,
    message: string,
    options: GatewayErrorOptions = {},
  ) {
    super(message);
    this.chatCode = options.chatCode ?? nativeType;
    this.chatType = options.chatType ?? mapStatusToChatType(status);
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
    if (options.log) this.log = options.log;
  }
}

/** Chat `error.type` for a status, as the common SDK's server sends it (wire-formats.md §7). */
export function mapStatusToChatType(status: number): string {
  if (status >= 500) return 'server_error';
  if (status === 429) return 'requests';
  if (status === 402) return 'insufficient_quota';
  if (status === 403) return 'permission_error';
  return 'invalid_request_error';
}

/** Native error body for a GatewayError. */
export function formatNativeError(error: GatewayError, requestId?: string): Record<string, unknown> {
  const body: Record<string, unknown> = { type: 'error', error: { type: error.nativeType, message: error.message } };
  if (requestId) body.request_id = requestId;
  return body;
}

/** Chat-completions error body for a GatewayError. */
export function formatChatError(error: GatewayError): { error: { message: string; type: string; param: string | null; code: string } } {
  return { error: { message: error.message, type: error.chatType, param: error.param, code: error.chatCode } };
}

/** Shorthands for the errors of the error table in the README. */
export const errors = {
  invalidRequest: (message: string, param?: string | null) =>
    new GatewayError(400, 'invalid_request_error', message, { chatCode: 'invalid_request_error', param }),
  unsupportedMediaType: (message: string) =>
    new GatewayError(415, 'invalid_request_error', message, { chatCode: 'unsupported_media_type' }),
  authentication: (message: string) =>
    new GatewayError(401, 'authentication_error', message, { chatCode: 'invalid_api_key' }),
  modelNotFound: (message: string) =>
    new GatewayError(404, 'not_found_error', message, { chatCode: 'model_not_found', param: 'model' }),
  modelNotAllowed: (message: string) =>
    new GatewayError(403, 'permission_error', message, { chatCode: 'model_not_allowed', param: 'model' }),
  notFound: (message: string) => new GatewayError(404, 'not_found_error', message, { chatCode: 'not_found' }),
  /** 403 for a caller whose role does not allow the action (the admin API's people and teams). */
  forbidden: (message: string) => new GatewayError(403, 'permission_error', message, { chatCode: 'forbidden' }),
  /** 405 with `Allow` (RFC 9110 §15.5.6): the path exists, not with this method. */
  methodNotAllowed: (message: string, allow: string[]) =>
    new GatewayError(405, 'invalid_request_error', message, { chatCode: 'method_not_allowed', headers: { allow: allow.join(', ') } }),
  misdirected: (message: string) =>
    new GatewayError(421, 'invalid_request_error', message, { chatCode: 'misdirected_request' }),
  tooLarge: (message: string) =>
    new GatewayError(413, 'request_too_large', message, { chatCode: 'request_too_large' }),
  upstreamUnreachable: (message: string) =>
    new GatewayError(502, 'api_error', message, { chatCode: 'upstream_error' }),
  upstreamTimeout: (message: string) => new GatewayError(504, 'api_error', message, { chatCode: 'upstream_error' }),
  /**
   * 502: the cloud target `targetId`'s credentials could not be obtained. The client's message names
   * only the target; `detail` (the cloud SDK's own message, which may name files, roles, account ids,
   * endpoints or token details) goes to the operator's log line, at error level, and nowhere else.
   */
  cloudCredentials: (targetId: string, provider: string, detail: string) =>
    new GatewayError(502, 'api_error', `upstream target "${targetId}": its cloud credentials could not be obtained`, {
      chatCode: 'upstream_error', log: { message: 'cloud credentials could not be obtained', target: targetId, provider, error: detail },
    }),
  internal: (message = 'internal error') => new GatewayError(500, 'api_error', message, { chatCode: 'server_error' }),
};

/**
 * The gateway error for a failure that is not one yet: a translator's TranslationError (the client's
 * request could not be converted) is a 400 naming its field; anything else is undefined.
 */
export function fromTranslationError(err: unknown): GatewayError | undefined {
  return err instanceof TranslationError ? errors.invalidRequest(err.message, err.param) : undefined;
}

/**
 * Map an upstream socket-level failure to the gateway error the client sees (before any byte was sent).
 * ECONNREFUSED, DNS and reset errors -> 502; a timeout -> 504; a cloud target's credentials that could
 * not be obtained (CloudCredentialError: nothing was sent) -> 502 `errors.cloudCredentials`.
 */
export function mapUpstreamSocketError(err: NodeJS.ErrnoException, timedOut: boolean): GatewayError {
  if (timedOut || err.code === 'ETIMEDOUT' || err.code === 'ESOCKETTIMEDOUT') {
    return errors.upstreamTimeout('the upstream did not answer in time');
  }
  if (err instanceof CloudCredentialError) return errors.cloudCredentials(err.targetId, err.provider, err.detail);
  return errors.upstreamUnreachable(`the upstream could not be reached (${err.code ?? 'connection error'})`);
}
