/**
 * The clouds' errors in the first-party terms, in one place: the status the pool counts (a cloud's
 * throttling and unavailability are the pool's 429 and 503: cooldown, breaker, failover before the
 * first byte) and the error body the client gets, in the native shape
 * (`{"type":"error","error":{"type":..,"message":..}}`, https://docs.anthropic.com/en/api/errors) with
 * the cloud's own wording kept (Claude Code's recovery matches on it). The clouds give only their data:
 * Bedrock's exception statuses (bedrock-replies.ts), Google's canonical codes (vertex-errors.ts).
 */
import type http from 'node:http';
import { mapStatusToNativeErrorType } from '../../../translators/chat-to-native-mapping';
import { tryParseJson } from '../../http/read-body';
import { BEDROCK_EXCEPTION_STATUSES } from './bedrock-replies';
import type { ProviderName } from './provider';
import { GOOGLE_STATUSES } from './vertex-errors';

/**
 * The exception name of an `x-amzn-errortype` header (`ThrottlingException:http://internal.amazon.com/...`
 * -> `ThrottlingException`) or of an event-stream `:exception-type` (`throttlingException`, camel-cased).
 */
export function readExceptionName(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  const name = text?.split(':')[0].trim();
  return name ? name.charAt(0).toUpperCase() + name.slice(1) : undefined;
}

/** The status a Bedrock exception stands for ({@link BEDROCK_EXCEPTION_STATUSES}), or undefined for a name it does not list. */
function statusOfException(name: string | undefined): number | undefined {
  return name === undefined ? undefined : BEDROCK_EXCEPTION_STATUSES[name];
}

/**
 * The native error type of a Bedrock exception (the stream's exception frames), `api_error` for a
 * name Bedrock's reference does not list.
 */
export function nativeTypeOfException(name: string | undefined): string {
  const status = statusOfException(name);
  return status === undefined ? 'api_error' : mapStatusToNativeErrorType(status);
}

/**
 * The status a cloud's error reply counts as, for the pool (failover, cooldown, breaker) and the
 * client: a Bedrock exception by its name (header `x-amzn-errortype`), else the reply's own status
 * (Vertex answers RESOURCE_EXHAUSTED with 429 and UNAVAILABLE with 503 itself).
 */
export function poolStatusOf(provider: ProviderName, status: number, headers: http.IncomingHttpHeaders): number {
  if (provider === 'bedrock' && status >= 400) return statusOfException(readExceptionName(headers['x-amzn-errortype'])) ?? status;
  return status;
}

/** A native error reply body: its text, and that text parsed (undefined when it is not JSON). */
export interface NativeErrorText {
  text: string;
  body: unknown;
}

/**
 * A cloud's error body (`text`) as the native error body, its message kept word for word: a body
 * already native is returned as it is; Bedrock's `{"message"}` (or `{"Message"}`, as some AWS services
 * send) and Google's `{"error":{"code","message","status"}}` (or a list of those) are rewritten;
 * anything else becomes the message itself (cut to 2000 characters). The error type follows Bedrock's
 * exception or Google's canonical code when known, else `status`.
 * @param status the reply's HTTP status (after {@link poolStatusOf})
 * @param headers the reply's headers (Bedrock's `x-amzn-errortype` names the exception)
 * @param parsed `text` parsed, when the caller has parsed it already (undefined: not JSON)
 * @returns the native body's JSON text and that body (`text` is parsed once, the result not again)
 */
export function nativeCloudError(provider: ProviderName, status: number, headers: http.IncomingHttpHeaders, text: string, parsed: unknown = tryParseJson(text)): NativeErrorText {
  const native = parsed as any;
  if (native?.type === 'error' && typeof native.error?.type === 'string') return { text, body: parsed };
  const first = Array.isArray(native) ? native[0] : native;
  const exception = provider === 'bedrock' ? readExceptionName(headers['x-amzn-errortype']) : undefined;
  let message: string | undefined;
  let typeStatus = statusOfException(exception) ?? status;
  if (typeof first?.message === 'string' || typeof first?.Message === 'string') {
    message = first.message ?? first.Message;
  } else if (typeof first?.error?.message === 'string') {
    message = first.error.message;
    typeStatus = GOOGLE_STATUSES[first.error.status as string] ?? typeStatus;
  }
  message ??= text.slice(0, 2000) || `the ${provider} upstream answered ${status}${exception ? ` (${exception})` : ''}`;
  const body = { type: 'error', error: { type: mapStatusToNativeErrorType(typeStatus), message } };
  return { text: JSON.stringify(body), body };
}
