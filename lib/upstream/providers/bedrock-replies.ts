/**
 * Bedrock's replies that are not streams, turned into the first-party API's: a whole message without
 * `usage` (filled from the token-count headers) and CountTokens' `{"inputTokens": n}`; and the data of
 * its errors (JSON `{"message": ...}` with the exception named in the `x-amzn-errortype` header), which
 * cloud-errors.ts maps.
 * Pure functions, but for {@link createWholeReplyAdapter}, which collects a small JSON body.
 *
 * Sources: Bedrock runtime API reference, InvokeModel and CountTokens "Errors"
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html,
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html); the native
 * error shape and types: https://docs.anthropic.com/en/api/errors.
 */
import type http from 'node:http';
import { Transform } from 'node:stream';

/**
 * Each Bedrock exception's status in the API's terms (its native error type follows from it:
 * cloud-errors.ts). From the runtime API reference's "Errors" of InvokeModel, InvokeModelWithResponseStream
 * and CountTokens (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html#API_runtime_InvokeModel_Errors)
 * and the common errors (https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html).
 * Bedrock answers ModelNotReadyException with 429 ("not ready to serve inference requests"): a cold
 * model, not the caller's rate, and nothing ran, so it is the API's 503 `overloaded_error`.
 * ModelTimeoutException (Bedrock's 408) is the API's 504 `timeout_error`.
 */
export const BEDROCK_EXCEPTION_STATUSES: Readonly<Record<string, number>> = {
  ThrottlingException: 429,
  ServiceQuotaExceededException: 429,
  ServiceUnavailableException: 503,
  ModelNotReadyException: 503,
  ValidationException: 400,
  AccessDeniedException: 403,
  UnrecognizedClientException: 401,
  InvalidSignatureException: 401,
  MissingAuthenticationTokenException: 401,
  ResourceNotFoundException: 404,
  ModelTimeoutException: 504,
  ModelErrorException: 500,
  ModelStreamErrorException: 500,
  InternalServerException: 500,
};

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
