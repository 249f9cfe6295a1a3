/**
 * The signed thinking of tool loops, kept per key in the store (as stored responses are) so that a
 * client that sends an assistant turn back without its thinking (chat clients rebuilding the message,
 * Responses clients dropping `encrypted_content`) still gets its tool loop through: see
 * translators/tool-loop-thinking.ts.
 */
import type { RequestContext } from '../pipeline/context';
import type { Logger } from '../observability/logger';
import type { ResponseStore } from './types';
import type { ChatThinkingBlock } from '../../translators/chat-types';
import type { ModelCapabilities } from '../../translators/model-capabilities';
import { continueWithoutThinking, findUnsignedToolTurn, restoreThinking, thinkingStoreId, type ToolLoopRequest } from '../../translators/tool-loop-thinking';

/**
 * A tool loop's assistant turn that came back without its thinking (findUnsignedToolTurn): the blocks
 * kept for its first tool call by this key, loaded before the admission so that the credit hold counts
 * them (`kept`, middleware/kept-thinking.ts), are put back; without them the turn goes on without
 * thinking. Returns the warning of the latter.
 */
export function restoreToolLoopThinking(kept: RequestContext['keptThinking'], request: ToolLoopRequest, caps: ModelCapabilities | undefined): string | undefined {
  const turn = findUnsignedToolTurn(request, caps);
  if (!turn) return undefined;
  if (kept && kept.toolUseId === turn.toolUseIds[0]) {
    restoreThinking(turn, kept.blocks as ChatThinkingBlock[]);
    return undefined;
  }
  return continueWithoutThinking(request, caps!);
}

/**
 * Keep a reply's thinking for its first tool call, for this key, `ttlMs` long (nothing to keep
 * without both), within the key's bound on stored bytes (`maxKeyBytes`, config
 * `responses.maxStoredBytesPerKey`, shared with its stored responses). A store that fails or refuses
 * costs the client nothing now: it is logged, and the next turn goes on without thinking if the client
 * drops the blocks. Never rejects.
 */
export async function keepThinking(store: ResponseStore, logger: Logger, ctx: RequestContext, blocks: readonly ChatThinkingBlock[], toolCallIds: readonly string[],
  ttlMs: number, maxKeyBytes: number): Promise<void> {
  if (blocks.length === 0 || toolCallIds.length === 0) return;
  try {
    const kept = await store.saveResponse({ id: thinkingStoreId(toolCallIds[0]), keyId: ctx.key!.id, response: {}, items: [...blocks] }, ttlMs, maxKeyBytes);
    if (!kept) logger.warn({ message: `thinking of a tool call not kept: the key holds responses.maxStoredBytesPerKey (${maxKeyBytes} bytes) already`, request_id: ctx.requestId });
  } catch (err) {
    logger.warn({ message: 'thinking of a tool call not kept: the store failed', request_id: ctx.requestId, error: (err as Error).message });
  }
}
