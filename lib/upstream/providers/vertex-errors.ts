/**
 * Vertex AI's error replies in the native error shape. A request Vertex AI's own front end refuses
 * (credentials, quota, project, model, availability) is answered in Google's error shape
 * (https://cloud.google.com/apis/design/errors, "Error model"):
 *   `{"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED", "details": [...]}}`,
 * sometimes as a list of such objects (`[{"error": {...}}]`, the shape of a streaming method's error);
 * what the model refuses (a body field, a beta flag) is already native
 * (`{"type": "error", "error": {"type": "invalid_request_error", ...}, "request_id": "req_vrtx_..."}`).
 * Native clients (Claude Code's recovery, the SDKs' retry) read the native shape, so the first kind is
 * rewritten with Google's wording kept; the second passes unchanged.
 */
import type { NativeErrorType } from '../../http/errors';

/** The native error type of each Google canonical code (https://cloud.google.com/apis/design/errors#handling_errors). */
const NATIVE_TYPE_BY_GOOGLE_STATUS: Record<string, NativeErrorType> = {
  INVALID_ARGUMENT: 'invalid_request_error',
  FAILED_PRECONDITION: 'invalid_request_error',
  OUT_OF_RANGE: 'invalid_request_error',
  UNAUTHENTICATED: 'authentication_error',
  PERMISSION_DENIED: 'permission_error',
  NOT_FOUND: 'not_found_error',
  RESOURCE_EXHAUSTED: 'rate_limit_error',
  UNAVAILABLE: 'overloaded_error',
  DEADLINE_EXCEEDED: 'timeout_error',
  INTERNAL: 'api_error',
  UNKNOWN: 'api_error',
};

/** The native error type of an HTTP status, for a Google error without a known `status`. */
function mapStatusToNativeType(httpStatus: number): NativeErrorType {
  if (httpStatus === 400) return 'invalid_request_error';
  if (httpStatus === 401) return 'authentication_error';
  if (httpStatus === 403) return 'permission_error';
  if (httpStatus === 404) return 'not_found_error';
  if (httpStatus === 413) return 'request_too_large';
  if (httpStatus === 429) return 'rate_limit_error';
  if (httpStatus === 503 || httpStatus === 529) return 'overloaded_error';
  if (httpStatus === 504) return 'timeout_error';
  return httpStatus >= 500 ? 'api_error' : 'invalid_request_error';
}

/** The `error` object of a Google error body (or of the first of a list of them), or undefined. */
function readGoogleError(body: unknown): { message: string; status?: string } | undefined {
  const first = Array.isArray(body) ? body[0] : body;
  if (typeof first !== 'object' || first === null || (first as { type?: unknown }).type === 'error') return undefined;
  const error = (first as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { message, status } = error as { message?: unknown; status?: unknown };
  if (typeof message !== 'string') return undefined;
  return { message, ...(typeof status === 'string' ? { status } : {}) };
}

/**
 * The native error body for a Vertex AI error reply.
 * @param httpStatus the reply's HTTP status (kept by the caller: 429 stays 429, 503 stays 503)
 * @param body the reply's bytes
 * @returns the native body's bytes (`{"type":"error","error":{"type","message"}}`, `message` Google's own
 *   wording), or null when `body` is not a Google error (already native, or not JSON): pass it unchanged
 */
export function convertGoogleErrorBody(httpStatus: number, body: Buffer): Buffer | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  const error = readGoogleError(parsed);
  if (!error) return null;
  const type = (error.status && NATIVE_TYPE_BY_GOOGLE_STATUS[error.status]) || mapStatusToNativeType(httpStatus);
  return Buffer.from(JSON.stringify({ type: 'error', error: { type, message: error.message } }));
}
