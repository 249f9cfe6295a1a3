/**
 * Reasoning items <-> native thinking blocks.
 *
 * A native `thinking` block must come back byte-identical with its `signature` when a multi-turn tool
 * loop continues (wire-formats.md §1.1, §1.2); a `redacted_thinking` block comes back as its opaque
 * `data`. The Responses API carries such state in a reasoning item's `encrypted_content` (returned
 * when the client lists `reasoning.encrypted_content` in `include`). The gateway's encoding is
 * `gw1.` + base64url(JSON of the block), so the thinking text and signature are both kept exactly,
 * whatever the client does to the item's `summary`.
 */
import type { NativeContentBlock } from './native-types';
import type { ResponsesReasoningItem } from './responses-types';

const PREFIX = 'gw1.';

/** `encrypted_content` for a native `thinking` or `redacted_thinking` block. */
export function encodeReasoning(block: NativeContentBlock): string {
  const { data, thinking, signature } = block as { data?: unknown; thinking?: unknown; signature?: unknown };
  const kept = block.type === 'redacted_thinking' ? { type: 'redacted_thinking', data } : { type: 'thinking', thinking, signature };
  return PREFIX + Buffer.from(JSON.stringify(kept), 'utf8').toString('base64url');
}

/**
 * The native block a reasoning input item stands for, or undefined when it carries none the gateway
 * can restore (no `encrypted_content`, or one not made by this gateway: another provider's blob).
 */
export function decodeReasoning(item: Pick<ResponsesReasoningItem, 'encrypted_content'>): NativeContentBlock | undefined {
  const encoded = item.encrypted_content;
  if (typeof encoded !== 'string' || !encoded.startsWith(PREFIX)) return undefined;
  try {
    const block = JSON.parse(Buffer.from(encoded.slice(PREFIX.length), 'base64url').toString('utf8')) as NativeContentBlock;
    if (block?.type === 'thinking' && typeof block.thinking === 'string' && typeof block.signature === 'string') {
      return { type: 'thinking', thinking: block.thinking, signature: block.signature };
    }
    if (block?.type === 'redacted_thinking' && typeof block.data === 'string') return { type: 'redacted_thinking', data: block.data };
  } catch {
    // not ours: fall through
  }
  return undefined;
}

/** Whether the client asked for `encrypted_content` on reasoning items. */
export function wantsEncryptedReasoning(include: readonly string[] | null | undefined): boolean {
  return Array.isArray(include) && include.includes('reasoning.encrypted_content');
}
