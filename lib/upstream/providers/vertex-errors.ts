/**
 * Vertex AI's error data. A request Vertex AI's own front end refuses (credentials, quota, project,
 * model, availability) is answered in Google's error shape (https://cloud.google.com/apis/design/errors,
 * "Error model"):
 *   `{"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED", "details": [...]}}`,
 * sometimes as a list of such objects (`[{"error": {...}}]`, the shape of a streaming method's error);
 * what the model refuses (a body field, a beta flag) is already native
 * (`{"type": "error", "error": {"type": "invalid_request_error", ...}, "request_id": "req_vrtx_..."}`).
 * Native clients (Claude Code's recovery, the SDKs' retry) read the native shape, so the first kind is
 * rewritten with Google's wording kept (cloud-errors.ts); the second passes unchanged.
 */

/**
 * Google's canonical codes (`error.status`) -> their HTTP status, which names the native error type.
 * https://cloud.google.com/apis/design/errors#handling_errors
 */
export const GOOGLE_STATUSES: Readonly<Record<string, number>> = {
  INVALID_ARGUMENT: 400, FAILED_PRECONDITION: 400, OUT_OF_RANGE: 400, UNAUTHENTICATED: 401, PERMISSION_DENIED: 403,
  NOT_FOUND: 404, RESOURCE_EXHAUSTED: 429, INTERNAL: 500, UNKNOWN: 500, UNAVAILABLE: 503, DEADLINE_EXCEEDED: 504,
};
