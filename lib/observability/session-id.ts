/**
 * The agent session a request belongs to, as the client labels it, for the request log, the usage by
 * session and the traces. Pure: headers and body in, a bounded label out.
 *
 * Where each client puts it (checked against the clients pinned in package.json):
 * - Claude Code: `X-Claude-Code-Session-Id` on every request (one id per session, resumed sessions
 *   keep it); `x-claude-code-agent-id` (and `x-claude-code-parent-agent-id`) on a subagent's requests.
 * - Codex (codex-rs, 0.169): `session-id` and `thread-id` (the thread differs from the session on a
 *   spawned agent's requests); older releases send `session_id` (codex-api `build_conversation_headers`);
 *   `x-openai-subagent` names the kind of subagent (`review`, `compact`, `collab_spawn`, ...).
 * - Codex and other Responses / chat-completions clients: `prompt_cache_key` in the body (Codex sets it
 *   to its session id; the OpenAI API documents it as a stable id for requests sharing a prefix).
 * The Responses chain root (`previous_response_id` chains) is the Responses route's own fallback: it
 * needs the store (routes/responses.ts).
 *
 * Session ids are client-supplied labels: they group usage and never authorise anything. A value that
 * is not 1 to 128 characters of `A-Z a-z 0-9 . _ : -` is ignored (a header sent twice, which Node joins
 * with ", ", is ignored too), so a log, a CSV export or a trace never carries what a client smuggled in.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** Longest session or agent id kept, in characters. */
export const MAX_SESSION_ID_LENGTH = 128;

const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Header names carrying a session id, most specific first (Node lower-cases incoming names). */
const SESSION_HEADERS = ['x-claude-code-session-id', 'session-id', 'session_id'] as const;

/** `value` when it is a well-formed session or agent id (1 to 128 of `A-Z a-z 0-9 . _ : -`), else undefined. */
export function checkSessionLabel(value: unknown): string | undefined {
  return typeof value === 'string' && SESSION_ID_PATTERN.test(value) ? value : undefined;
}

/** The first well-formed value of the headers `names`, in order. */
function firstHeader(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = checkSessionLabel(headers[name]);
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The session id of a request: Claude Code's `x-claude-code-session-id`, Codex's `session-id` (or the
 * older `session_id`), else the body's `prompt_cache_key` (Responses and chat-completions bodies).
 * @param headers the request's headers as Node gives them (names lower-case)
 * @param body the parsed JSON body, or anything else (ignored)
 * @returns the id, or undefined when none is sent or it is malformed (see the module's bounds)
 */
export function readSessionId(headers: IncomingHttpHeaders, body: unknown): string | undefined {
  const fromHeader = firstHeader(headers, SESSION_HEADERS);
  if (fromHeader !== undefined) return fromHeader;
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    return checkSessionLabel((body as Record<string, unknown>).prompt_cache_key);
  }
  return undefined;
}

/**
 * The agent or subagent a request comes from, where the client says: Claude Code's
 * `x-claude-code-agent-id`; Codex's `thread-id` when it differs from its session (a spawned agent's
 * thread), else its `x-openai-subagent` label. Undefined for a main agent's requests.
 * @param headers the request's headers as Node gives them (names lower-case)
 */
export function readAgentId(headers: IncomingHttpHeaders): string | undefined {
  const claudeAgent = checkSessionLabel(headers['x-claude-code-agent-id']);
  if (claudeAgent !== undefined) return claudeAgent;
  const thread = checkSessionLabel(headers['thread-id']);
  if (thread !== undefined && thread !== firstHeader(headers, SESSION_HEADERS)) return thread;
  return checkSessionLabel(headers['x-openai-subagent']);
}
