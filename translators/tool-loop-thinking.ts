/**
 * Signed thinking in a tool loop (chat and Responses routes). With thinking on, the native API refuses a request whose last
 * assistant turn (the one whose tool calls the last user turn answers) does not start with the
 * thinking block the model produced (400 "Expected `thinking` or `redacted_thinking`, but found
 * `tool_use`"; https://platform.claude.com/docs/en/build-with-claude/extended-thinking#preserving-thinking-blocks).
 * Chat clients that rebuild the assistant message from `content` and `tool_calls` (LangChain, the AI
 * SDK, many agents) drop the `thinking_blocks` the gateway replied (and Responses clients such as the
 * Agents SDK send reasoning items back without `encrypted_content`), so the gateway keeps them per key
 * under the turn's first tool call id and puts them back; when it has none, that turn goes on
 * without thinking rather than failing.
 */
import { thinks, type ModelCapabilities, type TunableRequest } from './model-capabilities';
import type { ChatThinkingBlock } from './chat-types';

/** The native request of either translated route, as far as the tool loop's thinking goes. */
export interface ToolLoopRequest extends TunableRequest {
  messages: Array<{ role: string; content: string | Array<{ type: string }> }>;
}

/** The assistant turn of a tool loop that lacks its thinking, and its tool call ids. */
export interface UnsignedToolTurn {
  content: Array<{ type: string }>;
  toolUseIds: string[];
}

/**
 * The last assistant turn, when the request continues a tool loop with thinking on and that turn
 * does not start with a thinking block; else undefined.
 */
export function findUnsignedToolTurn(request: ToolLoopRequest, caps: ModelCapabilities | undefined): UnsignedToolTurn | undefined {
  if (!caps || !thinks(request, caps)) return undefined;
  const { messages } = request;
  const last = messages[messages.length - 1];
  const turn = messages[messages.length - 2];
  if (!Array.isArray(last?.content) || !last.content.some((block) => block.type === 'tool_result')) return undefined;
  if (turn?.role !== 'assistant' || !Array.isArray(turn.content)) return undefined;
  const first = turn.content[0]?.type;
  if (first === 'thinking' || first === 'redacted_thinking') return undefined;
  const toolUseIds = turn.content.filter((block) => block.type === 'tool_use').map((block) => String((block as { type: string; id?: unknown }).id));
  return toolUseIds.length > 0 ? { content: turn.content, toolUseIds } : undefined;
}

/** Put the thinking blocks the gateway saw back at the start of the turn, in place. */
export function restoreThinking(turn: UnsignedToolTurn, blocks: readonly ChatThinkingBlock[]): void {
  turn.content.unshift(...blocks.map((block) => ({ ...block })));
}

/**
 * Turn thinking off for this request, in place (the model's way: no thinking field, or
 * `thinking: {type: "disabled"}` for a model that thinks unasked). A model that always thinks cannot
 * go on without it: undefined, and the upstream's answer stands.
 * @returns the warning for `x-gateway-warning`, or undefined when thinking could not be turned off
 */
export function continueWithoutThinking(request: ToolLoopRequest, caps: ModelCapabilities): string | undefined {
  if (caps.thinkingDefault === 'always') return undefined;
  delete request.output_config;
  if (caps.thinkingDefault === 'on') request.thinking = { type: 'disabled' };
  else delete request.thinking;
  return 'thinking left out for this turn: the assistant turn of the tool loop came back without its thinking and the gateway no longer holds it';
}

/** The store id under which a reply's thinking is kept for its first tool call. */
export function thinkingStoreId(toolUseId: string): string {
  return `chatthk_${toolUseId}`;
}
