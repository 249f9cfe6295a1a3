/**
 * The session a request belongs to, as its client names it: the one function every part of the
 * gateway derives it with (upstream session affinity, the request log).
 *
 * Sources, first present wins:
 *   1. header `x-claude-code-session-id`: Claude Code, one per conversation (what it sends is
 *      recorded in spec/integration/clients/claude-code.spec.ts);
 *   2. header `session_id`: Codex, its conversation id (codex-rs, codex-api/src/requests/headers.rs,
 *      `build_conversation_headers`);
 *   3. body `prompt_cache_key` (Responses and chat-completions): the key the client groups its prompt
 *      cache by (Codex sends its conversation id there too);
 *   4. body `previous_response_id` (Responses): the chain the request continues (the Responses route
 *      puts the chain's first id in its place, see middleware/responses.ts).
 */

/** Longest session id kept, in characters; a longer value is no session. */
export const MAX_SESSION_ID_LENGTH = 128;

/** What a session id may hold: printable ASCII without spaces, quotes or backslashes. */
const SESSION_ID = /^[A-Za-z0-9._:@+=/-]{1,128}$/;

/** The headers read (lower case, as Node gives them). */
const SESSION_HEADERS = ['x-claude-code-session-id', 'session_id'] as const;

/** `value` when it is a well-formed session id, else undefined. */
function sessionIdOf(value: unknown): string | undefined {
  return typeof value === 'string' && SESSION_ID.test(value) ? value : undefined;
}

/**
 * The session id of a request.
 * @param headers the request headers (Node's lower-cased `IncomingHttpHeaders`)
 * @param body the parsed JSON body, any shape
 * @returns 1 to 128 characters of `[A-Za-z0-9._:@+=/-]`, or undefined when the request names no
 *   (well-formed) session; a malformed value is ignored, never an error
 */
export function readSessionId(headers: Record<string, string | string[] | undefined>, body: unknown): string | undefined {
  for (const name of SESSION_HEADERS) {
    const id = sessionIdOf(headers[name]);
    if (id !== undefined) return id;
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const fields = body as { prompt_cache_key?: unknown; previous_response_id?: unknown };
  return sessionIdOf(fields.prompt_cache_key) ?? sessionIdOf(fields.previous_response_id);
}
