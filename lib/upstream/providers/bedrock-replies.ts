/**
 * Bedrock's replies that are not streams, turned into the first-party API's: its errors (JSON
 * `{"message": ...}` with the exception named in the `x-amzn-errortype` header), a whole message
 * without `usage` (filled from the token-count headers) and CountTokens' `{"inputTokens": n}`.
 * Pure functions, but for {@link createWholeReplyAdapter}, which collects a small JSON body.
 *
 * Sources: Bedrock runtime API reference, InvokeModel and CountTokens "Errors"
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html,
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html); the native
 * error shape and types: https://docs.anthropic.com/en/api/errors.
 */
import type http from 'node:http';
import { Transform } from 'node:stream';

/** The native error reply body. */
export interface NativeErrorBody {
  type: 'error';
  error: { type: string; message: string };
}

/**
 * Each Bedrock exception's status and native error type. Bedrock answers ModelNotReadyException with
 * 429; it is a cold model, not the caller's rate, so it becomes the API's 503 `overloaded_error`.
 * ModelTimeoutException (Bedrock's 408) becomes the API's 504 `timeout_error`.
 */
export const BEDROCK_EXCEPTIONS: Readonly<Record<string, { status: number; type: string }>> = {
  ThrottlingException: { status: 429, type: 'rate_limit_error' },
  ServiceQuotaExceededException: { status: 429, type: 'rate_limit_error' },
  ServiceUnavailableException: { status: 503, type: 'overloaded_error' },
  ModelNotReadyException: { status: 503, type: 'overloaded_error' },
  ValidationException: { status: 400, type: 'invalid_request_error' },
  AccessDeniedException: { status: 403, type: 'permission_error' },
  UnrecognizedClientException: { status: 401, type: 'authentication_error' },
  InvalidSignatureException: { status: 401, type: 'authentication_error' },
  MissingAuthenticationTokenException: { status: 401, type: 'authentication_error' },
  ResourceNotFoundException: { status: 404, type: 'not_found_error' },
  ModelTimeoutException: { status: 504, type: 'timeout_error' },
  ModelErrorException: { status: 500, type: 'api_error' },
  ModelStreamErrorException: { status: 500, type: 'api_error' },
  InternalServerException: { status: 500, type: 'api_error' },
};

/** The API's status for a Bedrock error reply: its exception's ({@link BEDROCK_EXCEPTIONS}), else Bedrock's own. */
export function mapBedrockStatus(status: number, errorType: string | string[] | undefined): number {
  const name = readExceptionName(errorType);
  return (name === undefined ? undefined : BEDROCK_EXCEPTIONS[name]?.status) ?? status;
}

/** The native error type of a status Bedrock sent without a known exception name. */
function typeOfStatus(status: number): string {
  if (status === 400 || status === 422) return 'invalid_request_error';
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  if (status === 504 || status === 408) return 'timeout_error';
  return 'api_error';
}

/**
 * The exception name of an `x-amzn-errortype` header (`ThrottlingException:http://internal.amazon.com/...`
 * -> `ThrottlingException`) or of an event-stream `:exception-type` (`throttlingException`, camel-cased).
 */
export function readExceptionName(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  const name = text?.split(':')[0].trim();
  return name ? name.charAt(0).toUpperCase() + name.slice(1) : undefined;
}

/**
 * The native error for a Bedrock error reply: status and body `{"type":"error","error":{type, message}}`
 * with Bedrock's own wording as the message (`body.message`, or `Message` as some AWS services send).
 * @param status Bedrock's HTTP status
 * @param errorType the `x-amzn-errortype` header
 * @param body Bedrock's reply body (bytes, maybe not JSON)
 */
export function convertBedrockError(status: number, errorType: string | string[] | undefined, body: Buffer): { status: number; body: NativeErrorBody } {
  const name = readExceptionName(errorType);
  const known = name === undefined ? undefined : BEDROCK_EXCEPTIONS[name];
  let message: string | undefined;
  try {
    const parsed = JSON.parse(body.toString('utf8'));
    message = typeof parsed?.message === 'string' ? parsed.message : typeof parsed?.Message === 'string' ? parsed.Message : undefined;
  } catch {
    message = undefined;
  }
  message ??= body.length > 0 ? body.toString('utf8').slice(0, 2000) : `Bedrock answered ${status}${name ? ` (${name})` : ''}`;
  return { status: known?.status ?? status, body: { type: 'error', error: { type: known?.type ?? typeOfStatus(status), message } } };
}

/** A token count header as a number, or undefined when absent or not a count. */
function readCountHeader(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || !/^\d+$/.test(text.trim())) return undefined;
  return Number(text);
}

/**
 * A whole InvokeModel reply (native message JSON) with `usage` filled from Bedrock's
 * `x-amzn-bedrock-input-token-count` / `x-amzn-bedrock-output-token-count` headers when the body has
 * none; the body itself when it has usage, is not JSON, or the headers carry no counts.
 */
export function fillUsageFromHeaders(body: Buffer, headers: http.IncomingHttpHeaders): Buffer {
  const input = readCountHeader(headers['x-amzn-bedrock-input-token-count']);
  const output = readCountHeader(headers['x-amzn-bedrock-output-token-count']);
  if (input === undefined && output === undefined) return body;
  let parsed: any;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || parsed.usage) return body;
  parsed.usage = { input_tokens: input ?? 0, output_tokens: output ?? 0 };
  return Buffer.from(JSON.stringify(parsed));
}

/** CountTokens' `{"inputTokens": n}` as the API's count_tokens reply `{"input_tokens": n}`. */
export function convertCountTokensReply(body: Buffer): Buffer {
  try {
    const parsed = JSON.parse(body.toString('utf8'));
    if (typeof parsed?.inputTokens === 'number') return Buffer.from(JSON.stringify({ input_tokens: parsed.inputTokens }));
  } catch {
    // not JSON: passed on as it came, for the route to report
  }
  return body;
}

/** The largest error, whole-message or count reply body collected before conversion (bytes). */
export const MAX_COLLECTED_BODY = 32 * 1024 * 1024;

/**
 * A stream that collects a reply body (at most {@link MAX_COLLECTED_BODY} bytes: past it, it is destroyed
 * with an error) and writes `convert(body)` when the body ends.
 */
export function createWholeReplyAdapter(convert: (body: Buffer) => Buffer): Transform {
  const chunks: Buffer[] = [];
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > MAX_COLLECTED_BODY) return callback(new Error(`the Bedrock reply body is over ${MAX_COLLECTED_BODY} bytes`));
      chunks.push(chunk);
      callback();
    },
    flush(callback) {
      callback(null, convert(Buffer.concat(chunks, size)));
    },
  });
}
