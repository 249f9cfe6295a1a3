/**
 * The settlement finish step: when a request's response has closed, whatever ended it (complete
 * reply, upstream error, client abort, timeout), its credit reservation is replaced by the real cost
 * of the usage the reply reported: the JSON body's `usage`, or a stream's `message_start` and
 * `message_delta` usage as read on the way through. No usage seen (the upstream billed nothing, or
 * failed before replying) settles to 0. A non-streamed request whose client left before the reply is
 * still read to its end (the upstream bills it anyway): the settlement waits for that and bills it.
 * A request that got no reply head although the upstream may have run it (a head timeout, a socket
 * lost after the request left: `ctx.upstreamOutcomeUnknown`) is billed at its hold, its worst case:
 * the upstream may bill it and tells no usage; it is never sent again (lib/upstream/retry-policy.ts).
 * The store records each reservation once.
 *
 * The same store step books the usage on its UTC day and, for a request that reached the upstream
 * step, writes its request log record (lib/observability/request-log.ts); a request that reached the upstream
 * without a reservation (count_tokens, not billed), or whose identified key was refused before it
 * (402, 403, 429, ...), gets its record on its own, with 0 credits.
 *
 * What the catalogue cannot price (an unknown usage field, a fast-mode reply on a model without a
 * fast-mode multiplier) is logged as a warning once per name and process: never silently free.
 * Usage no reply can carry (lib/billing/usage-sanity.ts) is logged as an error and billed at the hold, with
 * no tokens: the store never sees the figures.
 */
import type { Response } from 'express';
import type { Logger } from '../observability/logger';
import { priceUsage, unpricedUsage } from './pricing';
import { emptyUsage, type RequestContext } from '../pipeline/context';
import type { AfterResponseStep } from '../pipeline/after-response';
import { formatRequestLogRecord, isLoggedRequest } from '../observability/request-log';
import { findImpossibleUsage } from './usage-sanity';
import { systemClock, type Clock } from '../store/month';
import type { LedgerStore, RequestLogStore, StoreConnection } from '../store/types';

/**
 * Build the after-response step that settles credits in `store`; `clock` (epoch ms) gives the booking
 * time; `logger` gets the unpriced-usage warnings.
 */
export function createSettlement(store: LedgerStore & RequestLogStore & Pick<StoreConnection, 'kind'>, clock: Clock = systemClock, logger?: Logger): AfterResponseStep {
  const warned = new Set<string>();
  const settle = async (ctx: RequestContext, res: Response) => {
    const reservation = ctx.reservation;
    const at = clock();
    if (!reservation || !ctx.model) {
      if (isLoggedRequest(ctx, res)) await store.appendRequestLog(formatRequestLogRecord(ctx, res, at, 0));
      return;
    }
    // Taken at once: a second run of this hook (there should be none) finds nothing to settle.
    ctx.reservation = undefined;
    // A whole reply whose client left goes on being read (routes/exchange.ts): its usage is billed.
    await ctx.upstreamDone;
    ctx.settledMonth = reservation.month;
    const reported = ctx.usage ?? emptyUsage();
    const impossible = findImpossibleUsage(ctx.model, reported);
    if (impossible) {
      logger?.error({ message: 'impossible usage reported by the upstream: billed at the hold', request_id: ctx.requestId, key_id: reservation.keyId, model: ctx.model.id, reason: impossible, held_credits: reservation.credits });
    }
    const usage = impossible ? emptyUsage() : reported;
    if (impossible) ctx.usage = usage;
    // The upstream may have run (and billed) a request whose head never came: the hold, its worst case.
    const atHold = ctx.usage === undefined && ctx.upstreamOutcomeUnknown === true;
    if (atHold) logger?.warn({ message: 'billed at the hold: no reply head came, but the upstream may have run the request', request_id: ctx.requestId, credits: reservation.credits });
    // A target priced apart (its `priceMultiplier`, set on the context by the upstream step) scales the usage's price.
    const credits = impossible || atHold ? reservation.credits : priceUsage(ctx.model, usage) * (ctx.priceMultiplier ?? 1);
    ctx.credits = credits;
    for (const name of unpricedUsage(ctx.model, usage)) {
      if (warned.has(name)) continue;
      warned.add(name);
      logger?.warn({ message: `usage field not priced by the catalogue, billed without it: ${name}`, unpriced_usage: name });
    }
    await store.settleCredits(reservation, {
      model: ctx.model.id,
      inputTokens: usage.input_tokens,
      outputTokens: usage.output_tokens,
      cacheCreationInputTokens: usage.cache_creation_input_tokens,
      cacheReadInputTokens: usage.cache_read_input_tokens,
      credits,
      at,
      log: isLoggedRequest(ctx, res) ? formatRequestLogRecord(ctx, res, at, credits) : undefined,
    });
  };
  return async (ctx: RequestContext, res: Response) => {
    if (!ctx.reservation && !isLoggedRequest(ctx, res)) return;
    const span = ctx.trace?.startSpan('gateway.settlement', 'internal', { 'gateway.store': store.kind });
    try {
      await settle(ctx, res);
      span?.end();
    } catch (err) {
      span?.end(err as Error);
      throw err;
    }
  };
}
