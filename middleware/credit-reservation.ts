/**
 * Credit reservation against the key's hard monthly credit cap. Before the request is forwarded, its
 * worst case is reserved in the key's bucket for the current UTC month, atomically with the check that it
 * fits (spent + reserved by requests in flight + this one <= cap). The settlement step after the
 * response (lib/settlement.ts) replaces the reservation with the real cost when the reply ends, however it ends.
 *
 * Worst case = input bound x the model's highest input price (plain, cache writes, cache read)
 *            + max_tokens x the output price
 *            + web search bound x the price of a web search, where
 * input bound = ceil(bytes sent / reservation.bytesPerInputToken) + reservation.overheadInputTokens
 *             + IMAGE_INPUT_TOKENS per image part,
 * bytes sent = the body's size as received (the JSON body step measures it; a body set without that
 * step is measured as serialised JSON) + the stored conversation `previous_response_id` adds (Responses),
 * output = max_tokens (or the model default the route then sends) x the choices asked for (`n`, chat),
 * and web search bound = for each web search server tool offered (`tools[].type` `web_search_*`), its
 * `max_uses`, else reservation.webSearchesPerRequest. Only these fields are read, so any shape the
 * upstream accepts can be reserved for.
 *
 * Refused: 402 `billing_error` (chat: `insufficient_quota`). Not 429: no retry can succeed before the
 * month ends, and the SDKs retry 429 but not 402.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Catalogue } from '../lib/catalogue';
import type { GatewayConfig, ModelConfig } from '../lib/config';
import { getContext, type RequestContext } from '../lib/context';
import { GatewayError } from '../lib/errors';
import { nextUtcMonthStart, systemClock, utcMonth, type Clock } from '../lib/store/month';
import type { GatewayStore, Reservation } from '../lib/store/types';

export interface CreditReservationOptions {
  store: GatewayStore;
  catalogue: Catalogue;
  /** The input-size bound (config `reservation`); a function is read on each request (config reload). */
  reservation: GatewayConfig['reservation'] | (() => GatewayConfig['reservation']);
  /** How long a reservation lasts when its request never settles (its process died), in ms: the upstream timeout. */
  reservationTtlMs: number | (() => number);
  /** Which wire format the route's body is in (decides where max_tokens is read). */
  format: CreditReservationFormat;
  /** Clock for the month bucket, epoch ms. Default: the real clock. */
  clock?: Clock;
}

/** Input tokens a request can be billed for, at most (see the module comment). */
export function boundInputTokens(bodyBytes: number, reservation: GatewayConfig['reservation']): number {
  return Math.ceil(bodyBytes / reservation.bytesPerInputToken) + reservation.overheadInputTokens;
}

/**
 * Input tokens held per image part: an image whose URL is a few bytes of JSON is billed for its pixels.
 * The native API resizes images past about 1.15 megapixels, so one costs at most about 1600 tokens
 * (tokens = width x height / 750; https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs).
 */
export const IMAGE_INPUT_TOKENS = 1600;

/** Part types that carry an image: chat `image_url`, Responses `input_image`, native `image`. */
const IMAGE_PART_TYPES = new Set(['image_url', 'input_image', 'image']);

/**
 * Image parts in a request's conversation (messages or input items, their content, and the content of
 * tool results inside them), looked for at most `depth` levels down.
 */
export function countImageParts(value: unknown, depth = 7): number {
  if (depth < 0 || value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let count = 0;
    for (const item of value) count += countImageParts(item, depth - 1);
    return count;
  }
  const record = value as { type?: unknown; content?: unknown; messages?: unknown; input?: unknown; output?: unknown };
  if (typeof record.type === 'string' && IMAGE_PART_TYPES.has(record.type)) return 1;
  return countImageParts(record.messages, depth - 1) + countImageParts(record.input, depth - 1)
    + countImageParts(record.content, depth - 1) + countImageParts(record.output, depth - 1);
}

/** Web searches a request can be billed for, at most (see the module comment); 0 when it offers no web search tool. */
export function boundWebSearches(body: unknown, reservation: GatewayConfig['reservation']): number {
  const tools = (body as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(tools)) return 0;
  let searches = 0;
  for (const tool of tools) {
    if (typeof tool?.type !== 'string' || !tool.type.startsWith('web_search')) continue;
    const maxUses = tool.max_uses;
    searches += Number.isInteger(maxUses) && maxUses >= 0 ? maxUses : reservation.webSearchesPerRequest;
  }
  return searches;
}

/**
 * Credits of `inputTokens` input, `outputTokens` output and `webSearches` server-side searches at a
 * model's prices, input at its highest price.
 */
export function priceWorstCase(model: ModelConfig, inputTokens: number, outputTokens: number, webSearches = 0): number {
  const p = model.pricing;
  const inputPrice = Math.max(p.inputPerMillion, p.cacheWritePerMillion ?? 0, p.cacheWrite1hPerMillion ?? 0, p.cacheReadPerMillion ?? 0);
  return (inputTokens * inputPrice + outputTokens * p.outputPerMillion) / 1_000_000 + webSearches * (p.webSearchPerRequest ?? 0);
}

/** The body formats whose output bound the credit step reads. */
export type CreditReservationFormat = 'native' | 'chat' | 'responses';

/**
 * The output tokens a request may produce: native `max_tokens`; chat `max_completion_tokens`,
 * `max_tokens`; Responses `max_output_tokens`; else the model default (what the routes then send);
 * times the choices a chat request asks for (`n`, validated as an integer of at most MAX_CHOICES).
 */
export function maxOutputTokens(req: Request, format: CreditReservationFormat, model: ModelConfig, catalogue: Catalogue): number {
  const body = req.body as { max_tokens?: unknown; max_completion_tokens?: unknown; max_output_tokens?: unknown; n?: unknown };
  const given = format === 'chat' ? body.max_completion_tokens ?? body.max_tokens
    : format === 'responses' ? body.max_output_tokens
      : body.max_tokens;
  const perChoice = typeof given === 'number' && Number.isFinite(given) && given > 0 ? Math.ceil(given) : catalogue.defaultMaxTokens(model);
  const choices = format === 'chat' && typeof body.n === 'number' && Number.isInteger(body.n) && body.n > 1 ? body.n : 1;
  return perChoice * choices;
}

/**
 * The credit hold a request asks for (see the module comment): its worst case in credits, the current
 * UTC month's bucket, and how long the hold lasts. Reads the context's model, the body's size and
 * the stored conversation it continues (`ctx.previous`).
 */
export function createReservationEstimate(options: CreditReservationOptions): (req: Request, res: Response) => { month: string; credits: number; ttlMs: number } {
  const reservationNow = typeof options.reservation === 'function' ? options.reservation : () => options.reservation as GatewayConfig['reservation'];
  const reservationTtlNow = typeof options.reservationTtlMs === 'function' ? options.reservationTtlMs : () => options.reservationTtlMs as number;
  const clock = options.clock ?? systemClock;
  return (req, res) => {
    const ctx = getContext(res);
    const model = ctx.model!;
    const bodyBytes = (ctx.bodyBytes ?? Buffer.byteLength(JSON.stringify(req.body ?? {}))) + (ctx.previous?.bytes ?? 0);
    const reservation = reservationNow();
    const images = countImageParts(req.body) + countImageParts(ctx.previous?.items);
    const inputTokens = boundInputTokens(bodyBytes, reservation) + images * IMAGE_INPUT_TOKENS;
    const credits = priceWorstCase(model, inputTokens, maxOutputTokens(req, options.format, model, options.catalogue),
      boundWebSearches(req.body, reservation));
    return { month: utcMonth(clock()), credits, ttlMs: reservationTtlNow() };
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
        ?? await store.reserveCredits(key.id, wanted.month, wanted.credits, key.monthlyCreditCap, wanted.ttlMs);
      const { month, credits } = result.ok ? result.reservation : wanted;
      if (!result.ok) {
        const resetsAt = new Date(nextUtcMonthStart(clock())).toISOString().replace(/\.000Z$/, 'Z');
        const inFlight = result.reserved > 0 ? `, ${formatCredits(result.reserved)} reserved by requests in flight` : '';
        throw new GatewayError(402, 'billing_error',
          `monthly credit cap reached for this key: ${formatCredits(result.spent)} of ${formatCredits(result.cap)} credits spent in ${month} (UTC)${inFlight}; ` +
          `this request may cost up to ${formatCredits(credits)}. The cap resets at ${resetsAt}.`,
          { chatCode: 'insufficient_quota' });
      }
      if (res.destroyed) {
        // The client went away while the reservation was being made (a store round trip): its
        // after-response steps have run already, so nothing would settle it or stop renewing it. Release it now;
        // nothing was used.
        await store.settleCredits(result.reservation, {
          model: ctx.model!.id, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0,
        });
        return;
      }
      ctx.reservation = { ...result.reservation, requestId: ctx.requestId };
      renewer.keep(res, ctx.reservation, wanted.ttlMs);
      next();
    } catch (err) {
      next(err);
    }
  };
}

/**
 * A reservation's expiry (the upstream timeout) only bounds a request whose process died. A request still
 * in flight, such as a stream longer than that, has its reservation renewed at least every half expiry, so
 * its credits keep counting against the cap until it settles; renewals stop when the response closes.
 * One timer serves every request in flight (ticking at half the shortest expiry among them), rather
 * than an interval timer per request.
 */
export interface ReservationRenewer {
  /** Keep `reservation` alive (for `reservationTtlMs` past each renewal) until `res` closes. */
  keep(res: Response, reservation: Reservation, reservationTtlMs: number): void;
}

export function createReservationRenewer(store: GatewayStore): ReservationRenewer {
  const open = new Set<{ reservation: Reservation; reservationTtlMs: number }>();
  let timer: NodeJS.Timeout | undefined;
  let periodMs = Infinity;
  const renewAll = () => {
    for (const { reservation, reservationTtlMs } of open) {
      // A renewal that fails (store unreachable) leaves the reservation to its expiry; the next one may succeed.
      Promise.resolve().then(() => store.renewReservation(reservation, reservationTtlMs)).catch(() => undefined);
    }
  };
  return {
    keep(res, reservation, reservationTtlMs) {
      const entry = { reservation, reservationTtlMs };
      open.add(entry);
      const wantedMs = Math.max(1000, Math.floor(reservationTtlMs / 2));
      if (timer === undefined || wantedMs < periodMs) {
        clearInterval(timer);
        periodMs = wantedMs;
        timer = setInterval(renewAll, periodMs);
        timer.unref();
      }
      // Until the upstream step is done too: a whole reply whose client left is still being read.
      res.once('close', () => void Promise.resolve((res.locals?.gateway as RequestContext | undefined)?.upstreamDone).then(() => {
        open.delete(entry);
        if (open.size > 0) return;
        clearInterval(timer);
        timer = undefined;
        periodMs = Infinity;
      }));
    },
  };
}

/** Credits for a message: at most 6 decimals, no trailing zeros. */
function formatCredits(credits: number): string {
  return String(Math.round(credits * 1e6) / 1e6);
}
