/**
 * The clouds' errors in the first-party terms, in one place: the status the pool counts (a cloud's
 * throttling and unavailability are the pool's 429 and 503: cooldown, breaker, failover before the
 * first byte) and the error body the client gets, in the native shape
 * (`{"type":"error","error":{"type":..,"message":..}}`, https://docs.anthropic.com/en/api/errors) with
 * the cloud's own wording kept (Claude Code's recovery matches on it).
 */
import type http from 'node:http';
import type { ProviderName } from './provider';

/**
 * Bedrock's exception names (header `x-amzn-errortype`, `Name:namespace`) -> the status the pool and the
 * client see. https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html#API_runtime_InvokeModel_Errors:
 * ThrottlingException 429, ServiceUnavailableException 503, ModelNotReadyException 429 ("not ready to
 * serve inference requests": the model is not loaded, nothing ran, so an unavailability: 503).
 */
const BEDROCK_STATUSES: Readonly<Record<string, number>> = {
  ThrottlingException: 429,
  ServiceUnavailableException: 503,
  ModelNotReadyException: 503,
};

/**
 * Google's canonical codes (`error.status` of a Vertex AI error body) -> HTTP status, for a body whose
 * HTTP status was lost. https://cloud.google.com/apis/design/errors#handling_errors
 */
const GOOGLE_STATUSES: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400, FAILED_PRECONDITION: 400, OUT_OF_RANGE: 400, UNAUTHENTICATED: 401, PERMISSION_DENIED: 403,
  NOT_FOUND: 404, RESOURCE_EXHAUSTED: 429, INTERNAL: 500, UNAVAILABLE: 503, DEADLINE_EXCEEDED: 504,
};

/** The native error type of a status (https://docs.anthropic.com/en/api/errors). */
export function nativeErrorTypeOf(status: number): string {
  switch (status) {
    case 400: return 'invalid_request_error';
    case 401: return 'authentication_error';
    case 403: return 'permission_error';
    case 404: return 'not_found_error';
    case 413: return 'request_too_large';
    case 429: return 'rate_limit_error';
    case 503: case 529: return 'overloaded_error';
    case 504: return 'timeout_error';
    default: return status >= 400 && status < 500 ? 'invalid_request_error' : 'api_error';
  }
}

/** Bedrock's exception name from `x-amzn-errortype` (`ThrottlingException:http://...`), or undefined. */
export function bedrockErrorType(headers: http.IncomingHttpHeaders): string | undefined {
  const value = headers['x-amzn-errortype'];
  return typeof value === 'string' && value !== '' ? value.split(':')[0] : undefined;
}

/**
 * The status a cloud's error reply counts as, for the pool (failover, cooldown, breaker) and the
 * client: a Bedrock exception by its name, else the reply's own status (Vertex answers
 * RESOURCE_EXHAUSTED with 429 and UNAVAILABLE with 503 itself).
 */
export function poolStatusOf(provider: ProviderName, status: number, headers: http.IncomingHttpHeaders): number {
  if (provider === 'bedrock' && status >= 400) {
    const type = bedrockErrorType(headers);
    return (type && BEDROCK_STATUSES[type]) || status;
  }
  return status;
}

/**
 * A cloud's error body (`text`, already redacted) as the native error body, its message kept word for
 * word: a body already native is returned as it is; Bedrock's `{"message"}` (or `{"Message"}`) and
 * Google's `{"error":{"code","message","status"}}` (or a list of those) are rewritten; anything else
 * becomes the message itself (cut to 2000 characters).
 */
export function nativeCloudErrorBody(provider: ProviderName, status: number, headers: http.IncomingHttpHeaders, text: string): string {
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed?.type === 'error' && typeof parsed.error?.type === 'string') return text;
  if (Array.isArray(parsed)) parsed = parsed[0];
  let message: string | undefined;
  let type = nativeErrorTypeOf(status);
  if (typeof parsed?.message === 'string' || typeof parsed?.Message === 'string') {
    message = parsed.message ?? parsed.Message;
  } else if (typeof parsed?.error?.message === 'string') {
    message = parsed.error.message;
    const google = GOOGLE_STATUSES[parsed.error.status as string];
    if (google && status < 400) type = nativeErrorTypeOf(google);
  }
  if (provider === 'bedrock') {
    const name = bedrockErrorType(headers);
    // The exception's name stays in front of its message, as the AWS SDKs show it.
    if (name && message !== undefined && !message.startsWith(name)) message = `${name}: ${message}`;
  }
  message ??= text.slice(0, 2000) || `the ${provider} upstream answered ${status}`;
  return JSON.stringify({ type: 'error', error: { type, message } });
}
