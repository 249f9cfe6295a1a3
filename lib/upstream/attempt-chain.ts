/**
 * Why a request failed, as the operator reads it (the log line, the request log record, the trace):
 * the error the client got (type and message) and, when an upstream attempt failed, the chain of
 * attempts (`a:529 overloaded_error (Overloaded) -> b:ECONNREFUSED`), each with the upstream's own
 * error type and message. Reasons are bounded (`REASON_CHARS`), kept to one line, and read only from
 * an error body's `type` and `message` members, credentials redacted: never a secret, never a prompt.
 * Nothing is recorded while every attempt succeeds.
 */
import type http from 'node:http';
import type { AttemptOutcome } from './attempt';
import { tryParseJson } from '../http/read-body';

/** Longest error message kept, in characters (a longer one is cut and ends with `…`). */
export const REASON_CHARS = 500;
/** Longest attempt chain kept, in characters (cut like a reason). */
export const CHAIN_CHARS = 2000;
/** Most attempts kept per request (the retry policy and the pool bound them well below this). */
export const MAX_ATTEMPTS = 20;
/** Most bytes of a failed attempt's error body read for its reason (the APIs' error bodies are small JSON objects). */
const ERROR_BODY_BYTES = 4096;

/** An error as the operator sees it: its type (native `error.type`, or the chat `code`/`type`) and message. */
export interface ErrorReason {
  type: string;
  message: string;
}

/** One upstream attempt of a request whose attempts did not all succeed. */
export interface UpstreamAttempt {
  /** Id of the target tried (`upstream.targets[].id`). */
  target: string;
  /** The reply's HTTP status, or the socket error's code (`ECONNREFUSED`, `timeout`). */
  outcome: number | string;
  /** The upstream's error type and message, once its error body has been read. */
  reason?: ErrorReason;
}

/** What carries a request's attempts (the request context: no object is made per request). */
export interface AttemptChainHolder {
  attempts?: UpstreamAttempt[];
}

/** `text` on one line, at most `limit` characters. */
export function boundReason(text: string, limit = REASON_CHARS): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/**
 * The type and message of an upstream error body: native `{type: "error", error: {type, message}}`
 * (https://docs.anthropic.com/en/api/errors) or chat-completions `{error: {message, type, code}}`;
 * undefined when the body is neither (an HTML page from a proxy, say: never quoted).
 * @param body `text` parsed, when the caller has parsed it already (undefined: not JSON)
 */
export function readErrorReason(text: string, body: unknown = tryParseJson(text)): ErrorReason | undefined {
  const error = (body as { error?: unknown } | null)?.error;
  if (!error || typeof error !== 'object') return undefined;
  const { type, code, message } = error as Record<string, unknown>;
  const name = typeof type === 'string' ? type : typeof code === 'string' ? code : undefined;
  if (name === undefined && typeof message !== 'string') return undefined;
  return { type: boundReason(name ?? 'error'), message: typeof message === 'string' ? boundReason(message) : '' };
}

/**
 * Note an attempt on `holder`'s chain (at most `MAX_ATTEMPTS`).
 * @returns the attempt noted, undefined when the chain is full
 */
export function noteAttempt(holder: AttemptChainHolder, target: string, outcome: AttemptOutcome): UpstreamAttempt | undefined {
  const attempts = (holder.attempts ??= []);
  if (attempts.length >= MAX_ATTEMPTS) return undefined;
  const attempt: UpstreamAttempt = { target, outcome: 'status' in outcome ? outcome.status : outcome.timedOut ? 'timeout' : outcome.error.code ?? 'connection error' };
  attempts.push(attempt);
  return attempt;
}

/**
 * Drain a reply the retry loop discards (failed over, retried). When its attempt was noted, its
 * error body is read on the side (at most 4 KiB, `redact` applied) into the attempt's reason; nothing
 * waits for it.
 */
export function discardReply(response: http.IncomingMessage | undefined, attempt: UpstreamAttempt | undefined, redact: (text: string) => string): void {
  if (!response) return;
  if (attempt) {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      if (size >= ERROR_BODY_BYTES) return;
      chunks.push(chunk);
      size += chunk.length;
    });
    response.once('end', () => {
      attempt.reason = readErrorReason(redact(Buffer.concat(chunks).subarray(0, ERROR_BODY_BYTES).toString('utf8')));
    });
  }
  response.resume();
}

/**
 * Give the last attempt of the chain its reason when the reply it brought was read elsewhere (the
 * reply path reads the error body the client gets).
 */
export function noteLastReason(holder: AttemptChainHolder, reason: ErrorReason | undefined): void {
  const last = holder.attempts?.[holder.attempts.length - 1];
  if (last && reason && last.reason === undefined && typeof last.outcome === 'number') last.reason = reason;
}

/**
 * The chain as one line, at most `CHAIN_CHARS` characters: `a:529 overloaded_error (Overloaded) ->
 * b:ECONNREFUSED`; undefined without attempts.
 */
export function formatAttemptChain(attempts: readonly UpstreamAttempt[] | undefined): string | undefined {
  if (!attempts || attempts.length === 0) return undefined;
  return attempts.map(({ target, outcome, reason }) => {
    const head = `${target}:${outcome}`;
    if (!reason) return head;
    return reason.message ? `${head} ${reason.type} (${reason.message})` : `${head} ${reason.type}`;
  }).join(' -> ').slice(0, CHAIN_CHARS);
}
