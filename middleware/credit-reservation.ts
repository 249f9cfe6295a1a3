/**
 * Credit reservation against the key's hard monthly credit cap. Before the request is forwarded, its
 * worst case (lib/billing/worst-case.ts) is reserved in the key's bucket for the current UTC month,
 * atomically with the check that it fits (spent + reserved by requests in flight + this one <= cap).
 * The settlement step after the response (lib/billing/settlement.ts) replaces the reservation with the real
 * cost when the reply ends, however it ends.
 *
 * What is held is what the upstream can bill: the stored conversation a Responses `previous_response_id`
 * puts before the body (`ctx.previous`) and the signed thinking a tool loop gets back (`ctx.keptThinking`),
 * both loaded before this step, what the upstream adds (files, fetched documents, server-tool results:
 * lib/billing/input-bound.ts) and the choices a chat request asks for (`n`) count in the worst case.
 *
 * A cap usable to its last credit: when the worst case does not fit but the worst case of a minimal
 * reply (`reservation.minOutputTokens` output tokens) does, the store holds all the credit left and
 * the request's `max_tokens` (chat: `max_completion_tokens`, Responses: `max_output_tokens`) is lowered
 * to what that hold pays; the reply says so in `x-gateway-max-tokens` (the new figure) and
 * `x-gateway-warning`. The cap is never passed: the lowered request's worst case fits the hold.
 *
 * A native request the byte bound refuses (its key not used up) is measured with the upstream's
 * count_tokens and held at that figure when it fits (middleware/measured-input.ts).
 *
 * Refused: 402 `billing_error` (chat: `insufficient_quota`) saying what is left and what the request
 * needs at least, and its input bound part by part (which part refused). Not 429: no retry can succeed before the month ends, and the SDKs retry 429 but not
 * 402. When the request would fit but for the holds of requests still in flight, the 402 says so and
 * carries `retry-after`.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import type { GatewayConfig } from '../lib/config';
import { DEFAULT_KEY_GROUP, holdPriceMultiplier } from '../lib/config/key-groups';
import { getContext, type RequestContext } from '../lib/pipeline/context';
import { capRefusal, formatCredits, formatResetsAt, type CapNeed } from '../lib/billing/cap-refusal';
import { MIN_THINKING_BUDGET } from '../translators/model-capabilities';
import { nextUtcMonthStart, systemClock, utcMonth, type Clock } from '../lib/store/month';
import type { LedgerStore, TeamCaps } from '../lib/store/types';
import { teamCapsOf } from '../lib/store/people-caps';
import type { TeamConfig } from '../lib/config/people';
import { isUtf8 } from 'node:buffer';
import {
  boundInputTokens, choicesOf, describeWorstCase, estimateWorstCase, fitOutputTokens, maxOutputTokens, priceWorstCase, scaleWorstCase, worstCaseCredits,
  type CreditReservationFormat, type WorstCase,
} from '../lib/billing/worst-case';
import { holdAtMeasuredInput } from './measured-input';
import { createReservationRenewer } from '../lib/billing/reservation-renewer';

export { createReservationRenewer, type ReservationRenewer } from '../lib/billing/reservation-renewer';
import type { UpstreamClient } from '../lib/upstream';
import { asksWideWindow, boundInput, contextWindowOf, type InputBound } from '../lib/billing/input-bound';

export interface CreditReservationOptions {
  store: LedgerStore;
  catalogue: Catalogue;
  /** The input-size bound (config `reservation`); a function is read on each request (config reload). */
  reservation: GatewayConfig['reservation'] | (() => GatewayConfig['reservation']);
  /** How long a reservation lasts when its request never settles (its process died), in ms: the upstream timeout. */
  reservationTtlMs: number | (() => number);
  /** Which wire format the route's body is in (decides where max_tokens is read). */
  format: CreditReservationFormat;
  /** Clock for the month bucket, epoch ms. Default: the real clock. */
  clock?: Clock;
  /**
   * The upstream whose count_tokens measures a request the byte bound refuses (middleware/measured-input.ts),
   * or undefined; absent: never measured (routes whose body is not native).
   */
  measureWith?: (ctx: RequestContext) => UpstreamClient | undefined;
  /**
   * The teams (config `teams[]`), read on each request of a key in a team: its holds fit its member's
   * and its team's month caps too (lib/store/people-caps.ts). Absent: every key's own cap only.
   */
  teams?: () => readonly TeamConfig[];
}


export {
  boundInputTokens, boundServerToolRequests, IMAGE_INPUT_TOKENS, maxOutputTokens, priceWorstCase, type CreditReservationFormat,
} from '../lib/billing/worst-case';

/**
 * The credit hold a request asks for (see the module comment): its worst case in credits, the current
 * UTC month's bucket, and how long the hold lasts. Reads the context's model, the body's size and
 * the stored conversation it continues (`ctx.previous`).
 */
export function createReservationEstimate(options: CreditReservationOptions): (req: Request, res: Response) => HoldWanted {
  const worstCaseOf = createWorstCaseEstimate(options);
  const reservationTtlNow = typeof options.reservationTtlMs === 'function' ? options.reservationTtlMs : () => options.reservationTtlMs as number;
  const clock = options.clock ?? systemClock;
  return (req, res) => {
    const { worst, minOutputTokens } = worstCaseOf(req, res);
    const wanted: HoldWanted = {
      month: utcMonth(clock()),
      credits: worstCaseCredits(worst),
      minCredits: worstCaseCredits(worst, Math.min(worst.maxTokens, minOutputTokens)),
      ttlMs: reservationTtlNow(),
    };
    // Only a key in a team looks its team up; any other asks for exactly what it did before.
    const key = getContext(res).key;
    if (key?.team && options.teams) wanted.teamCaps = teamCapsOf(key, options.teams());
    return wanted;
  };
}

/** The hold a request asks for (AdmissionRequest.reservation): credits, the month, how long, and a team key's caps. */
export interface HoldWanted {
  month: string;
  credits: number;
  minCredits: number;
  ttlMs: number;
  teamCaps?: TeamCaps;
}

/**
 * Bytes of the body the upstream gets: the body as received. A native body sent serialised again (an
 * alias renamed; `resent`: its `max_tokens` is being lowered) that is not valid UTF-8 grows, each bad
 * byte a three-byte U+FFFD: it is held at its size serialised again. (The check runs only then: the
 * body as received needs none. A longer upstream model name is not input the upstream bills.)
 */
function sentBodyBytes(req: Request, ctx: RequestContext, format: CreditReservationFormat, resent: boolean): number {
  const raw = ctx.rawBody;
  const received = ctx.bodyBytes ?? Buffer.byteLength(JSON.stringify(req.body ?? {}));
  const upstreamModel = ctx.model!.upstreamModel;
  if (format !== 'native' || !raw || (!resent && (req.body as { model?: unknown }).model === upstreamModel) || isUtf8(raw)) return received;
  return Math.max(received, Buffer.byteLength(JSON.stringify({ ...(req.body as object), model: upstreamModel })));
}

/**
 * What a request's hold is multiplied by (holdPriceMultiplier, lib/config/key-groups.ts): a request
 * pinned to one target (`ctx.target`: the one holding the files it names) goes there whatever models
 * it lists and is billed at its `priceMultiplier` (lib/billing/settlement.ts), so it is held at that
 * target's; any other request at the dearest target serving its model. 1 without a key group; a pinned
 * target gone from the config is 1 too (the request is refused 502 before it is sent: target-choice.ts).
 */
function holdMultiplierOf(catalogue: Catalogue, ctx: RequestContext): number {
  const group = catalogue.keyGroup(ctx.keyGroup ?? DEFAULT_KEY_GROUP);
  const pinned = ctx.target;
  return pinned === undefined ? holdPriceMultiplier(group, ctx.model!.id) : holdPriceMultiplier(group, null, (target) => target.id === pinned);
}

/**
 * The worst case of a request (lib/billing/worst-case.ts) and its input bound (lib/billing/input-bound.ts),
 * from the context's model, what is sent (the body, the stored conversation, restored thinking) and
 * the files it names; and the smallest reply allowed.
 */
function createWorstCaseEstimate(options: CreditReservationOptions): (req: Request, res: Response, resent?: boolean) => { worst: WorstCase; input: InputBound; minOutputTokens: number } {
  const reservationNow = typeof options.reservation === 'function' ? options.reservation : () => options.reservation as GatewayConfig['reservation'];
  return (req, res, resent = false) => {
    const ctx = getContext(res);
    const model = ctx.model!;
    const bytes = sentBodyBytes(req, ctx, options.format, resent) + (ctx.previous?.bytes ?? 0) + (ctx.keptThinking?.bytes ?? 0);
    const reservation = reservationNow();
    const contextWindow = contextWindowOf(model, options.format === 'native' && asksWideWindow(req.headers?.['anthropic-beta']));
    const input = boundInput(req.body, { bytes, reservation, contextWindow, extra: ctx.previous?.items, files: ctx.files });
    const worst = scaleWorstCase(estimateWorstCase(model, req.body, input.tokens, maxOutputTokens(req, options.format, model, options.catalogue), reservation,
      choicesOf(req, options.format)), holdMultiplierOf(options.catalogue, ctx));
    return { worst, input, minOutputTokens: reservation.minOutputTokens };
  };
}

/**
 * Lower the request's output bound to `maxTokens` in its body (the native proxy then sends the body
 * serialised again instead of the bytes received), with a native thinking budget kept below it, and
 * tell the client in `x-gateway-max-tokens` and `x-gateway-warning`.
 */
function lowerMaxTokens(req: Request, res: Response, format: CreditReservationFormat, from: number, maxTokens: number): void {
  const ctx = getContext(res);
  const body = req.body as Record<string, unknown>;
  if (format === 'chat') {
    body.max_completion_tokens = maxTokens;
    if (body.max_tokens !== undefined) body.max_tokens = maxTokens;
  } else if (format === 'responses') {
    body.max_output_tokens = maxTokens;
  } else {
    body.max_tokens = maxTokens;
    const thinking = body.thinking as { budget_tokens?: unknown } | undefined;
    if (thinking && typeof thinking.budget_tokens === 'number' && thinking.budget_tokens >= maxTokens) {
      if (maxTokens - 1 >= MIN_THINKING_BUDGET) {
        body.thinking = { ...thinking, budget_tokens: maxTokens - 1 };
      } else {
        // The API refuses a budget under its minimum: the reply the credit pays for is one without thinking.
        body.thinking = { type: 'disabled' };
        ctx.warnings.push(`thinking left out: a budget below max_tokens ${maxTokens} would be under the API's minimum of ${MIN_THINKING_BUDGET}`);
      }
    }
    ctx.rawBody = undefined;
  }
  const field = format === 'chat' ? 'max_completion_tokens' : format === 'responses' ? 'max_output_tokens' : 'max_tokens';
  ctx.warnings.push(`${field} lowered from ${from} to ${maxTokens}: the credit left under this key's monthly cap pays for no more`);
  res.setHeader('x-gateway-max-tokens', String(maxTokens));
  res.setHeader('x-gateway-warning', ctx.warnings.join('; '));
}

/**
 * Bytes of the smallest request body, a little under the smallest worth sending
 * (`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}` is 70): a cap whose credit
 * left cannot pay such a request with a minimal reply is used up (every budget alert fires).
 */
const SMALLEST_BODY_BYTES = 64;

/**
 * What a refused request needs (the 402's words, lib/billing/cap-refusal.ts): at least `minCredits`
 * (its input and a minimal reply), up to `credits` with its output bound; `parts`: its input bound part by part.
 */
function requestNeed(minCredits: number, credits: number, parts: string): CapNeed {
  return {
    minCredits,
    words: `this request needs at least ${formatCredits(minCredits)} (its input and a minimal reply; up to ${formatCredits(credits)} with its output bound), its ${parts}`,
    toFit: 'To fit, send a shorter request (or fewer files, images or server-tool uses) or use a cheaper model.',
  };
}

/**
 * The credit reservation step. The hold is normally taken by the request's admission in the
 * rate-limit step (one store round trip for both, see middleware/rate-limit.ts); this step reads its
 * result. On a route built without that admission it takes the hold itself.
 */
export function createCreditReservation(options: CreditReservationOptions): RequestHandler {
  const { store } = options;
  const estimate = createReservationEstimate(options);
  const worstCaseOf = createWorstCaseEstimate(options);
  const reservationNow = typeof options.reservation === 'function' ? options.reservation : () => options.reservation as GatewayConfig['reservation'];
  const clock = options.clock ?? systemClock;
  const renewer = createReservationRenewer(store);
  return async (req, res, next) => {
    try {
      const ctx = getContext(res);
      const key = ctx.key!;
      // The admission asked for this hold already (and took it, unless refused); a route built
      // without that admission estimates and takes it here.
      const wanted = ctx.admission?.asked ?? estimate(req, res);
      const result = ctx.admission?.reserved
        ?? await store.reserveCredits(key.id, wanted.month, wanted.credits, key.monthlyCreditCap, wanted.ttlMs, wanted.minCredits, undefined, wanted.teamCaps);
      let measured: Awaited<ReturnType<typeof holdAtMeasuredInput>> = null;
      if (!result.ok) {
        const resetsAt = formatResetsAt(nextUtcMonthStart(clock()));
        // Used up: nothing in flight and not even the smallest request (SMALLEST_BODY_BYTES, a minimal reply) fits.
        const reservation = reservationNow();
        const smallest = priceWorstCase(ctx.model!, boundInputTokens(SMALLEST_BODY_BYTES, reservation), reservation.minOutputTokens);
        const usedUp = result.reserved === 0 && result.cap - result.spent < smallest;
        // The key's own alerts fire at its own cap used up, not at its member's or team's; the team's below (budget-alerts.ts).
        if (usedUp && (result.limit ?? 'key') === 'key') ctx.capExhaustedMonth = wanted.month;
        const { input } = worstCaseOf(req, res);
        // Only a request its byte bound refuses whatever is in flight, on a cap not used up, pays the
        // count_tokens round trip (measured-input.ts); one refused for holds in flight waits for them.
        const inFlight = result.reserved > 0 && result.cap - result.spent >= (wanted.minCredits ?? wanted.credits);
        const upstream = !usedUp && !inFlight ? options.measureWith?.(ctx) : undefined;
        measured = upstream ? await holdAtMeasuredInput(req, ctx, {
          store, upstream, bound: input, reservation, month: wanted.month, ttlMs: wanted.ttlMs,
          maxTokens: maxOutputTokens(req, options.format, ctx.model!, options.catalogue), choices: choicesOf(req, options.format), teamCaps: wanted.teamCaps,
          priceMultiplier: holdMultiplierOf(options.catalogue, ctx),
        }) : null;
        // A team key's team cap is used up when its settled spend leaves less than the smallest request
        // costs; then the tightest cap's credit left (holds counted), whichever cap it is, is below that too.
        if (!measured && key.team && result.cap - result.spent - result.reserved < smallest) ctx.teamCapCheck = { month: wanted.month, smallestCredits: smallest };
        if (!measured) throw capRefusal(result, wanted.month, requestNeed(wanted.minCredits ?? wanted.credits, wanted.credits, describeWorstCase(ctx.model!, input)), resetsAt);
      }
      const held = measured?.reservation ?? (result as Extract<typeof result, { ok: true }>).reservation;
      if (held.credits < (measured?.credits ?? wanted.credits)) {
        // Held less than the worst case: all the credit left. Cut the reply to what that pays (the
        // body then goes out serialised again).
        const worst = measured?.worst ?? worstCaseOf(req, res, true).worst;
        lowerMaxTokens(req, res, options.format, worst.maxTokens, Math.max(1, fitOutputTokens(worst, held.credits)));
      }
      if (res.destroyed) {
        // The client went away while the reservation was being made (a store round trip): its
        // after-response steps have run already, so nothing would settle it or stop renewing it. Release it now;
        // nothing was used.
        await store.settleCredits(held, {
          model: ctx.model!.id, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0,
        });
        return;
      }
      ctx.reservation = { ...held, requestId: ctx.requestId };
      renewer.keep(res, ctx.reservation, wanted.ttlMs);
      next();
    } catch (err) {
      next(err);
    }
  };
}
