/**
 * Credit reservation against the key's hard monthly credit cap. Before the request is forwarded, its
 * worst case is held in the key's bucket for the current UTC month, atomically with the check that it
 * fits (spent + held by requests in flight + this one <= cap). The settlement finish step
 * (lib/settlement.ts) replaces the hold with the real cost when the reply ends, however it ends.
 *
 * Worst case = input bound x the model's highest input price (plain, cache write, cache read)
 *            + max_tokens x the output price, where
 * input bound = ceil(request body bytes / reservation.bytesPerInputToken) + reservation.overheadInputTokens,
 * the body's size as received (the JSON body step measures it; a body set without that step is
 * measured as serialised JSON).
 *
 * Refused: 402 `billing_error` (chat: `insufficient_quota`). Not 429: no retry can succeed before the
 * month ends, and the SDKs retry 429 but not 402.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Catalogue } from '../lib/catalogue';
import type { GatewayConfig, ModelConfig } from '../lib/config';
import { getContext } from '../lib/context';
import { GatewayError } from '../lib/errors';
import { nextUtcMonthStart, systemClock, utcMonth, type Clock } from '../lib/store/month';
import type { GatewayStore, Reservation } from '../lib/store/types';

export interface QuotaOptions {
  store: GatewayStore;
  catalogue: Catalogue;
  /** The input-size bound (config `reservation`); a function is read on each request (config reload). */
  reservation: GatewayConfig['reservation'] | (() => GatewayConfig['reservation']);
  /** How long a hold lasts when its request never settles (its process died), in ms: the upstream timeout. */
  holdTtlMs: number | (() => number);
  /** Which wire format the route's body is in (decides where max_tokens is read). */
  format: QuotaFormat;
  /** Clock for the month bucket, epoch ms. Default: the real clock. */
  clock?: Clock;
}

/** Input tokens a request can be billed for, at most (see the module comment). */
export function boundInputTokens(bodyBytes: number, reservation: GatewayConfig['reservation']): number {
  return Math.ceil(bodyBytes / reservation.bytesPerInputToken) + reservation.overheadInputTokens;
}

/** Credits of `inputTokens` input and `outputTokens` output at a model's prices, input at its highest price. */
export function priceWorstCase(model: ModelConfig, inputTokens: number, outputTokens: number): number {
  const p = model.pricing;
  const inputPrice = Math.max(p.inputPerMillion, p.cacheWritePerMillion ?? 0, p.cacheReadPerMillion ?? 0);
  return (inputTokens * inputPrice + outputTokens * p.outputPerMillion) / 1_000_000;
}

/** The body formats whose output bound the credit step reads. */
export type QuotaFormat = 'native' | 'chat' | 'responses';

/**
 * The output tokens a request may produce: native `max_tokens`; chat `max_completion_tokens`,
 * `max_tokens`; Responses `max_output_tokens`; else the model default.
 */
export function maxOutputTokens(req: Request, format: QuotaFormat, model: ModelConfig, catalogue: Catalogue): number {
  const body = req.body as { max_tokens?: unknown; max_completion_tokens?: unknown; max_output_tokens?: unknown };
  const given = format === 'chat' ? body.max_completion_tokens ?? body.max_tokens
    : format === 'responses' ? body.max_output_tokens
      : body.max_tokens;
  return typeof given === 'number' && Number.isFinite(given) && given > 0 ? Math.ceil(given) : catalogue.defaultMaxTokens(model);
}

export function createQuota(options: QuotaOptions): RequestHandler {
  const { store, catalogue } = options;
  const reservationNow = typeof options.reservation === 'function' ? options.reservation : () => options.reservation as GatewayConfig['reservation'];
  const holdTtlNow = typeof options.holdTtlMs === 'function' ? options.holdTtlMs : () => options.holdTtlMs as number;
  const clock = options.clock ?? systemClock;
  const renewer = createHoldRenewer(store);
  return async (req, res, next) => {
    try {
      const ctx = getContext(res);
      const key = ctx.key!;
      const model = ctx.model!;
      const bodyBytes = ctx.bodyBytes ?? Buffer.byteLength(JSON.stringify(req.body ?? {}));
      const credits = priceWorstCase(model, boundInputTokens(bodyBytes, reservationNow()), maxOutputTokens(req, options.format, model, catalogue));
      const now = clock();
      const month = utcMonth(now);
      const holdTtlMs = holdTtlNow();
      const result = await store.reserveCredits(key.id, month, credits, key.monthlyCreditCap, holdTtlMs);
      if (!result.ok) {
        const resetsAt = new Date(nextUtcMonthStart(now)).toISOString().replace(/\.000Z$/, 'Z');
        const inFlight = result.reserved > 0 ? `, ${formatCredits(result.reserved)} held by requests in flight` : '';
        throw new GatewayError(402, 'billing_error',
          `monthly credit cap reached for this key: ${formatCredits(result.spent)} of ${formatCredits(result.cap)} credits spent in ${month} (UTC)${inFlight}; ` +
          `this request may cost up to ${formatCredits(credits)}. The cap resets at ${resetsAt}.`,
          { chatCode: 'insufficient_quota' });
      }
      if (res.destroyed) {
        // The client went away while the hold was being made (a store round trip): its finish step
        // has run already, so nothing would settle this hold or stop renewing it. Release it now;
        // nothing was used.
        await store.settleCredits(result.reservation, {
          model: model.id, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0,
        });
        return;
      }
      ctx.reservation = { ...result.reservation, requestId: ctx.requestId };
      renewer.keep(res, ctx.reservation, holdTtlMs);
      next();
    } catch (err) {
      next(err);
    }
  };
}

/**
 * The hold's expiry (the upstream timeout) only bounds a request whose process died. A request still
 * in flight, such as a stream longer than that, has its hold renewed at least every half expiry, so
 * its credits keep counting against the cap until it settles; renewals stop when the response closes.
 * One timer serves every request in flight (ticking at half the shortest expiry among them), rather
 * than an interval timer per request.
 */
export interface HoldRenewer {
  /** Keep `reservation` held (for `holdTtlMs` past each renewal) until `res` closes. */
  keep(res: Response, reservation: Reservation, holdTtlMs: number): void;
}

export function createHoldRenewer(store: GatewayStore): HoldRenewer {
  // The holds in an array (removal swaps the last one into the gap), not a Map keyed by reservation:
  // see lib/in-flight.ts for what a Set or Map that takes and drops an object per request costs.
  const open: Array<{ reservation: Reservation; holdTtlMs: number; index: number }> = [];
  let timer: NodeJS.Timeout | undefined;
  let periodMs = Infinity;
  const renewAll = () => {
    for (const { reservation, holdTtlMs } of open) {
      // A renewal that fails (store unreachable) leaves the hold to its expiry; the next one may succeed.
      Promise.resolve().then(() => store.renewReservation(reservation, holdTtlMs)).catch(() => undefined);
    }
  };
  return {
    keep(res, reservation, holdTtlMs) {
      const entry = { reservation, holdTtlMs, index: open.length };
      open.push(entry);
      const wantedMs = Math.max(1000, Math.floor(holdTtlMs / 2));
      if (timer === undefined || wantedMs < periodMs) {
        clearInterval(timer);
        periodMs = wantedMs;
        timer = setInterval(renewAll, periodMs);
        timer.unref();
      }
      res.once('close', () => {
        const last = open.pop()!;
        if (last !== entry) {
          open[entry.index] = last;
          last.index = entry.index;
        }
        if (open.length > 0) return;
        clearInterval(timer);
        timer = undefined;
        periodMs = Infinity;
      });
    },
  };
}

/** Credits for a message: at most 6 decimals, no trailing zeros. */
function formatCredits(credits: number): string {
  return String(Math.round(credits * 1e6) / 1e6);
}
