/**
 * Automatic prompt caching for translated requests. OpenAI-format clients never ask for caching (their
 * API caches long prompts by itself), while the native API caches only up to the blocks marked with
 * `cache_control`. An agent re-sends its whole history every turn, so the gateway marks where that
 * prompt repeats: the last tool definition, the system prompt, and the last block of the conversation
 * so far (the next turn's request reads up to there and writes only what is new).
 *
 * Source: https://platform.claude.com/docs/en/build-with-claude/prompt-caching (cache order tools ->
 * system -> messages; at most four breakpoints; `ttl` "5m" or "1h"; thinking blocks cannot be marked;
 * a prefix shorter than the model's minimum is not cached, without error).
 */

/** A cache breakpoint's marker (wire-formats.md §1.1). */
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '1h';
}

/** The parts of a native request the breakpoints go on. */
export interface CacheableRequest {
  system?: string | Array<{ type: string; text?: string; cache_control?: CacheControl }>;
  tools?: Array<{ cache_control?: CacheControl; [field: string]: unknown }>;
  messages: Array<{ role: string; content: string | Array<{ type: string; cache_control?: CacheControl; [field: string]: unknown }> }>;
}

export interface PromptCacheOptions {
  /** How long a written prefix lives: `5m` (the API default) or `1h` (writes cost more; the key group's choice). */
  ttl: '5m' | '1h';
  /** The model's minimum cacheable prompt in tokens; a prompt that cannot reach it gets no breakpoint. Default 0. */
  minCacheableTokens?: number;
}

/** Block types that cannot carry `cache_control` (the API refuses a marked thinking block). */
const UNMARKABLE = new Set(['thinking', 'redacted_thinking']);

/**
 * Put up to three cache breakpoints on `request`, in place: the last tool, the system prompt (a
 * string becomes one text block), the last markable block of the last message. Nothing is changed
 * when the request already marks a block (the client manages its cache) or when its text is shorter,
 * in characters, than the model's minimum cacheable prompt in tokens (a token is at least one
 * character, so such a prompt can never be cached).
 * @returns the number of breakpoints added (0 to 3)
 */
export function addCacheBreakpoints(request: CacheableRequest, options: PromptCacheOptions): number {
  if (JSON.stringify(request).includes('"cache_control"')) return 0;
  if (promptCharacters(request) < (options.minCacheableTokens ?? 0)) return 0;
  const marker: CacheControl = options.ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
  let added = 0;
  const lastTool = request.tools?.[request.tools.length - 1];
  if (lastTool) {
    lastTool.cache_control = { ...marker };
    added += 1;
  }
  if (typeof request.system === 'string' && request.system !== '') request.system = [{ type: 'text', text: request.system }];
  const lastSystem = Array.isArray(request.system) ? request.system[request.system.length - 1] : undefined;
  if (lastSystem && lastSystem.type === 'text' && lastSystem.text) {
    lastSystem.cache_control = { ...marker };
    added += 1;
  }
  const last = request.messages[request.messages.length - 1];
  if (last && typeof last.content === 'string' && last.content !== '') last.content = [{ type: 'text', text: last.content }];
  const blocks = last && Array.isArray(last.content) ? last.content : [];
  const block = [...blocks].reverse().find((b) => !UNMARKABLE.has(b.type) && !(b.type === 'text' && !b.text));
  if (block) {
    block.cache_control = { ...marker };
    added += 1;
  }
  return added;
}

/** Characters of the prompt's text as sent (the JSON of tools, system and messages). */
function promptCharacters(request: CacheableRequest): number {
  return JSON.stringify(request.tools ?? []).length + JSON.stringify(request.system ?? '').length + JSON.stringify(request.messages).length;
}
