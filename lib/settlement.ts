/**
 * The settlement finish step: when a request's response has closed, whatever ended it (complete
 * reply, upstream error, client abort, timeout), its credit reservation is replaced by the real cost
 * of the usage the reply reported: the JSON body's `usage`, or a stream's `message_start` and
 * `message_delta` usage as read on the way through. No usage seen (the upstream billed nothing, or
 * failed before replying) settles to 0. The store records each reservation once.
 */
import { priceUsage } from './catalogue';
import { emptyUsage } from './context';
import type { AfterResponseStep } from './after-response';
import type { GatewayStore } from './store/types';

/** Build the finish hook that settles credits in `store`. */
export function createSettlement(store: GatewayStore): AfterResponseStep {
  return async (ctx) => {
    const reservation = ctx.reservation;
    if (!reservation || !ctx.model) return;
    // Taken at once: a second run of this hook (there should be none) finds nothing to settle.
    ctx.reservation = undefined;
    const usage = ctx.usage ?? emptyUsage();
    await store.settleCredits(reservation, {
      model: ctx.model.id,
      inputTokens: usage.input_tokens,
      outputTokens: usage.output_tokens,
      cacheCreationInputTokens: usage.cache_creation_input_tokens,
      cacheReadInputTokens: usage.cache_read_input_tokens,
      credits: priceUsage(ctx.model, usage),
    });
  };
}
