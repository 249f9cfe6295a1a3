/**
 * Chat and Responses routes (key groups with a native upstream): the signed thinking the gateway kept
 * for a tool loop's assistant turn (lib/store/kept-thinking.ts) is loaded before the admission, because
 * the route puts it back into the request: the credit hold (middleware/credit-reservation.ts) counts
 * its bytes as input, and the route restores nothing else (`ctx.keptThinking`).
 *
 * The turn is found in the client's body as the translators will build it: the run of assistant
 * messages (chat) or items (Responses: messages, reasoning, calls) before the tool results of the
 * last turn, its first tool call id (the native `tool_use.id`), when that run carries no thinking of
 * its own. Whether the converted request thinks is not known yet: a kept turn is loaded (and held
 * for) whenever there is one; the route restores it only into a request that thinks.
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import { getContext } from '../lib/pipeline/context';
import { DEFAULT_KEY_GROUP } from '../lib/config/key-groups';
import type { ResponseStore } from '../lib/store/types';
import { sanitizeToolId } from '../translators/chat-to-native-messages';
import { thinkingStoreId } from '../translators/tool-loop-thinking';

export interface KeptThinkingOptions {
  store: ResponseStore;
  catalogue: Catalogue;
  /** The route's body format. */
  format: 'chat' | 'responses';
}

type Entry = Record<string, unknown> | null | undefined;

/** Responses item types of an assistant turn (translators/responses-items.ts) and those that call a tool. */
const ASSISTANT_ITEMS = new Set(['reasoning', 'function_call', 'custom_tool_call', 'local_shell_call', 'web_search_call']);
const CALL_ITEMS = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);

/**
 * Chat: the first tool call id of the last assistant turn (consecutive assistant messages) when tool
 * messages answer it and it has no `thinking_blocks`; else undefined.
 */
export function chatToolTurnId(messages: unknown): string | undefined {
  if (!Array.isArray(messages)) return undefined;
  let last = messages.length - 1;
  while (last >= 0 && (messages[last] as Entry)?.role !== 'assistant') last -= 1;
  if (last < 0 || !messages.slice(last + 1).some((message) => (message as Entry)?.role === 'tool')) return undefined;
  let first = last;
  while (first > 0 && (messages[first - 1] as Entry)?.role === 'assistant') first -= 1;
  const blocks = (messages[first] as Entry)?.thinking_blocks;
  if (Array.isArray(blocks) && blocks.length > 0) return undefined;
  for (let i = first; i <= last; i += 1) {
    const id = ((messages[i] as Entry)?.tool_calls as Array<{ id?: unknown }> | undefined)?.[0]?.id;
    if (typeof id === 'string') return sanitizeToolId(id);
  }
  return undefined;
}

/** Whether a Responses item belongs to an assistant turn. */
function isAssistantItem(item: Entry): boolean {
  const type = item?.type;
  if (type === undefined || type === 'message') return item?.role === 'assistant';
  return typeof type === 'string' && ASSISTANT_ITEMS.has(type);
}

/**
 * Responses: the first call id of the last assistant turn (consecutive assistant items) when later
 * items carry tool output and the turn has no reasoning with `encrypted_content`; else undefined.
 */
export function responsesToolTurnId(items: readonly unknown[]): string | undefined {
  let last = items.length - 1;
  while (last >= 0 && !CALL_ITEMS.has(String((items[last] as Entry)?.type))) last -= 1;
  if (last < 0 || !items.slice(last + 1).some((item) => String((item as Entry)?.type).endsWith('_output'))) return undefined;
  let first = last;
  while (first > 0 && isAssistantItem(items[first - 1] as Entry)) first -= 1;
  let id: string | undefined;
  for (let i = last; i >= first; i -= 1) {
    const item = items[i] as Entry;
    if (item?.type === 'reasoning' && typeof item.encrypted_content === 'string') return undefined;
    if (CALL_ITEMS.has(String(item?.type)) && typeof item?.call_id === 'string') id = item.call_id;
  }
  return id;
}

/** The step: loads the kept thinking of the request's tool loop turn into `ctx.keptThinking`. A store that fails counts as holding nothing. */
export function createKeptThinking(options: KeptThinkingOptions): RequestHandler {
  const { store, catalogue } = options;
  return function keptThinking(req, res, next) {
    const ctx = getContext(res);
    // Only a model that can think has thinking restored; a chat-completions upstream gets none.
    if (!ctx.model?.capabilities || ctx.model.capabilities.thinking === 'none') return next();
    if (catalogue.keyGroup(ctx.keyGroup ?? DEFAULT_KEY_GROUP)?.upstream.kind !== 'native') return next();
    const body = req.body as { messages?: unknown; input?: unknown };
    const toolUseId = options.format === 'chat'
      ? chatToolTurnId(body.messages)
      : responsesToolTurnId([...(ctx.previous?.items ?? []), ...(Array.isArray(body.input) ? body.input : [])]);
    if (toolUseId === undefined) return next();
    store.getResponse(thinkingStoreId(toolUseId)).catch(() => null).then((kept) => {
      if (kept && kept.keyId === ctx.key!.id && Array.isArray(kept.items) && kept.items.length > 0) {
        ctx.keptThinking = { toolUseId, blocks: kept.items, bytes: Buffer.byteLength(JSON.stringify(kept.items)) };
      }
      next();
    }, next);
  };
}
