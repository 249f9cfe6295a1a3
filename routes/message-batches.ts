/**
 * Message Batches on the native route (platform.claude.com/docs/en/build-with-claude/batch-processing):
 *   POST   /v1/messages/batches              create: each request's model passes the key's aliases,
 *                                            key group and whitelist; the batch's worst case is held
 *   GET    /v1/messages/batches              list: only this key's batches
 *   GET    /v1/messages/batches/:id          retrieve (an ended batch is billed here if not yet)
 *   POST   /v1/messages/batches/:id/cancel   cancel
 *   GET    /v1/messages/batches/:id/results  results (JSONL), billed on the first read
 *   DELETE /v1/messages/batches/:id          delete (billed first if not yet)
 * A batch is pinned to the key that created it: for another key it does not exist (404). The upstream's
 * replies are relayed as they come (status, content type, body), but for each batch's `results_url`,
 * which names the gateway (`baseUrl` + path, else the path alone, which the SDKs resolve against their
 * base URL), never the upstream. Billing is lib/billing/batch-billing.ts.
 */
import type { Request, RequestHandler, Response } from 'express';
import { releaseHolds, settleBatch, type BatchPinData } from '../lib/billing/batch-billing';
import type { Catalogue } from '../lib/config/catalogue';
import type { GatewayConfig, ModelConfig } from '../lib/config';
import { getContext, type RequestContext } from '../lib/pipeline/context';
import { errors, GatewayError } from '../lib/http/errors';
import { capRefusal, formatCredits, formatResetsAt, type CapNeed } from '../lib/billing/cap-refusal';
import { DEFAULT_KEY_GROUP, holdPriceMultiplier } from '../lib/config/key-groups';
import { fromCreditUnits, toCreditUnits } from '../lib/store/credits';
import type { Logger } from '../lib/observability/logger';
import { nextUtcMonthStart, systemClock, utcMonth, type Clock } from '../lib/store/month';
import { teamCapsOf } from '../lib/store/people-caps';
import type { TeamConfig } from '../lib/config/people';
import type { LedgerStore, PinnedObject, ResponseStore } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';
import { keyGroupRefusal, whitelistRefusal } from '../middleware/model-access';
import { checkFilesOf } from '../middleware/file-access';
import { asksWideWindow, type FileFacts, type InputBound } from '../lib/billing/input-bound';
import { callUpstream, parseJson, pinnedTarget, type UpstreamAnswer } from '../lib/upstream/pinned-call';
import { CAPABILITIES, FEATURES } from '../lib/upstream/providers/capabilities';
import { cursorTarget, ownEntries, ownPin, relay } from './pinned-upstream';
import { batchWorstCase, describeWorstCase } from '../lib/billing/worst-case';

/** How long a batch is pinned and its holds last: results are kept 29 days after creation upstream. */
export const BATCH_PIN_TTL_MS = 30 * 24 * 3600_000;
/** Most requests in one batch (the upstream's limit). */
const MAX_BATCH_REQUESTS = 100_000;

/** What a `custom_id` may be (the Message Batches API's pattern). */
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

export interface MessageBatchesOptions {
  store: LedgerStore & ResponseStore;
  catalogue: Catalogue;
  /** The upstream of the request's key group, or a refusal when that group has no native upstream. */
  upstreamFor: (ctx: RequestContext) => UpstreamClient;
  reservation: () => GatewayConfig['reservation'];
  logger?: Logger;
  clock?: Clock;
  /** The gateway's public base URL (config `baseUrl`), or null. */
  baseUrl?: () => string | null;
  /** The teams (config `teams[]`): a team key's batch holds fit its member's and team's caps too. Default none. */
  teams?: () => readonly TeamConfig[];
}

/** A batch object with its `results_url` pointing at the gateway (see the module comment). */
function withOwnResultsUrl(batch: any, baseUrl: string | null): any {
  if (!batch || typeof batch !== 'object' || typeof batch.results_url !== 'string' || typeof batch.id !== 'string') return batch;
  return { ...batch, results_url: `${baseUrl?.replace(/\/$/, '') ?? ''}/v1/messages/batches/${encodeURIComponent(batch.id)}/results` };
}

/** Build the six handlers. */
export function createMessageBatches(options: MessageBatchesOptions): Record<'create' | 'list' | 'retrieve' | 'cancel' | 'results' | 'remove', RequestHandler> {
  const { store, catalogue } = options;
  const clock = options.clock ?? systemClock;

  /** A call about a batch goes to the target that created it (`pinnedTarget`, pinned-upstream.ts). */
  const call = (req: Request, res: Response, method: string, path: string, target?: string, body?: unknown) =>
    callUpstream(options.upstreamFor(getContext(res)), req, method, path, { body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)), target });
  const ownBatch = (res: Response, id: string) => ownPin(store, res, 'batch', id, 'message batch');

  /** Read the results upstream and settle the batch's holds when not done yet; the results as read. */
  async function bill(req: Request, res: Response, pin: PinnedObject): Promise<UpstreamAnswer> {
    const answer = await call(req, res, 'GET', `/v1/messages/batches/${encodeURIComponent(pin.id)}/results`, pinnedTarget(pin));
    if (answer.status === 200 && !(pin.data as BatchPinData).billed) {
      const ctx = getContext(res);
      await settleBatch(store, catalogue, pin, answer.body,
        { requestId: ctx.requestId, keyGroup: ctx.keyGroup ?? null, at: clock(), ttlMs: BATCH_PIN_TTL_MS, logger: options.logger });
    }
    return answer;
  }

  /**
   * Check each request of a create body (its shape, `custom_id`, model: aliases, key group and
   * whitelist) before anything else is read (its files), and rewrite its model to the upstream's.
   * @returns each request's catalogue model, and the model of each `custom_id`
   * @throws GatewayError 400 for a malformed batch, 404 for an unknown model, 403 for a refused one
   */
  function checkRequests(ctx: RequestContext, body: any): { requests: Array<{ params: Record<string, unknown>; model: ModelConfig }>; models: Record<string, string> } {
    const requests = body?.requests;
    if (!Array.isArray(requests) || requests.length === 0 || requests.length > MAX_BATCH_REQUESTS) {
      throw errors.invalidRequest(`requests: must be an array of 1 to ${MAX_BATCH_REQUESTS} requests`, 'requests');
    }
    // No prototype: a `custom_id` such as `__proto__` is an entry like any other.
    const models: Record<string, string> = Object.create(null);
    const checked = requests.map((entry: any, i: number) => {
      const params = entry?.params;
      if (typeof entry?.custom_id !== 'string' || !params || typeof params !== 'object' || typeof params.model !== 'string') {
        throw errors.invalidRequest(`requests.${i}: must be {custom_id: string, params: {model: string, ...}}`, `requests.${i}`);
      }
      // The API's own rule for a custom_id (Message Batches API reference); one id once per batch.
      if (!CUSTOM_ID.test(entry.custom_id) || entry.custom_id in models) {
        throw errors.invalidRequest(`requests.${i}.custom_id: must be 1 to 64 of A-Z a-z 0-9 _ -, unique in the batch`, `requests.${i}.custom_id`);
      }
      const model = catalogue.resolve(params.model);
      if (!model) throw errors.modelNotFound(`requests.${i}.params.model: model "${String(params.model).slice(0, 100)}" not found`);
      const refusal = keyGroupRefusal(catalogue, { ...ctx, model }) ?? whitelistRefusal({ ...ctx, model });
      if (refusal) throw new GatewayError(refusal.status, refusal.nativeType, `requests.${i}: ${refusal.message}`, { chatCode: 'model_not_allowed' });
      models[entry.custom_id] = model.id;
      params.model = model.upstreamModel;
      return { params, model };
    });
    return { requests: checked, models };
  }

  /**
   * The holds each model of a checked batch needs (credits), and what a 402 names: the request that
   * needs the most, its words put together only when one is sent (`describe`). `files`: what is known
   * of the files the requests name; `wideWindow`: the create request asks for the 1M context window.
   */
  function batchNeeds(requests: ReturnType<typeof checkRequests>['requests'], files: Map<string, FileFacts>, wideWindow: boolean): { needs: Map<string, number>; describeLargest(): string } {
    const needs = new Map<string, number>();
    let most = -1;
    let largest: { index: number; model: ModelConfig; input: InputBound } | undefined;
    requests.forEach(({ params, model }, index) => {
      const worst = batchWorstCase(model, params, catalogue.defaultMaxTokens(model), options.reservation(), files, wideWindow);
      needs.set(model.id, (needs.get(model.id) ?? 0) + worst.credits);
      if (worst.credits > most) [most, largest] = [worst.credits, { index, model, input: worst.input }];
    });
    return { needs, describeLargest: () => (largest ? `requests.${largest.index}: ${describeWorstCase(largest.model, largest.input)}` : '') };
  }

  /** Relay a reply whose body is one batch object, its results_url rewritten. */
  function relayBatch(res: Response, answer: UpstreamAnswer): void {
    const batch = answer.status === 200 ? parseJson(answer) : null;
    if (!batch) return relay(res, answer);
    relay(res, { ...answer, body: Buffer.from(JSON.stringify(withOwnResultsUrl(batch, options.baseUrl?.() ?? null))) });
  }

  const wrap = (handler: (req: Request, res: Response) => Promise<void>): RequestHandler => (req, res, next) => {
    handler(req, res).catch(next);
  };

  return {
    create: wrap(async (req, res) => {
      const ctx = getContext(res);
      const key = ctx.key!;
      // The batch's shape first: a malformed batch costs no store call.
      const { requests, models } = checkRequests(ctx, req.body);
      // A batch naming files is created on the target holding them (each request can read only its account's);
      // all its files read in one store call, before the holds: their sizes bound them.
      const files = new Map<string, FileFacts>();
      const target = await checkFilesOf(store, key.id, requests.map(({ params }, i) => ({ body: params, where: `requests.${i}: file_id` })), files);
      const { needs, describeLargest } = batchNeeds(requests, files, asksWideWindow(req.headers['anthropic-beta']));
      const month = utcMonth(clock());
      // The key group's native upstream (a chat-completions group has none: its 404 before any hold).
      const client = options.upstreamFor(ctx);
      // Held as a message is, through the same rule (holdPriceMultiplier): at the dearest target that
      // may create it. A batch is one upstream call for all its models, not routed by model: any target
      // offering Message Batches may create it (or only the one holding its files). Billed at the one that did.
      const multiplier = holdPriceMultiplier(catalogue.keyGroup(ctx.keyGroup ?? DEFAULT_KEY_GROUP), null,
        (t) => (target === undefined ? (CAPABILITIES[t.provider].features & FEATURES.batches) !== 0 : t.id === target));
      // The caps a team key's holds are asked with, as a message's (credit-reservation.ts): one per batch.
      const teamCaps = key.team && options.teams ? teamCapsOf(key, options.teams()) : undefined;
      const holds: BatchPinData['holds'] = [];
      // Units this batch holds so far (its holds for the models before).
      let heldUnits = 0;
      for (const [model, needed] of needs) {
        const result = await store.reserveCredits(key.id, month, needed * multiplier, key.monthlyCreditCap, BATCH_PIN_TTL_MS, undefined, undefined, teamCaps);
        if (!result.ok) {
          await releaseHolds(store, holds);
          // This batch's own holds (released) are not requests in flight: every ledger held them.
          const inFlight = fromCreditUnits(Math.max(0, toCreditUnits(result.reserved) - heldUnits));
          const total = [...needs.values()].reduce((sum, c) => sum + c, 0) * multiplier;
          throw capRefusal({ ...result, reserved: inFlight }, month, batchNeed(total, describeLargest()), formatResetsAt(nextUtcMonthStart(clock())));
        }
        holds.push({ model, reservation: result.reservation });
        heldUnits += toCreditUnits(result.reservation.credits);
      }
      let answer: UpstreamAnswer;
      try {
        answer = await call(req, res, 'POST', '/v1/messages/batches', target, req.body);
      } catch (err) {
        await releaseHolds(store, holds);
        throw err;
      }
      const created = answer.status === 200 ? parseJson(answer) : null;
      if (typeof created?.id !== 'string') {
        await releaseHolds(store, holds);
        return relay(res, answer);
      }
      const served = client.targets.length === 1 ? client.targets[0] : client.targets.find((t) => t.id === answer.target);
      const data: BatchPinData = { holds, models, billed: false, target: answer.target, ...(served && served.priceMultiplier !== 1 ? { priceMultiplier: served.priceMultiplier } : {}) };
      await store.savePin({ kind: 'batch', id: created.id, keyId: key.id, data }, BATCH_PIN_TTL_MS);
      relayBatch(res, answer);
    }),

    list: wrap(async (req, res) => {
      const query = new URLSearchParams(req.query as Record<string, string>).toString();
      const answer = await call(req, res, 'GET', `/v1/messages/batches${query ? `?${query}` : ''}`, await cursorTarget(store, res, 'batch', req.query));
      const page = answer.status === 200 ? parseJson(answer) : null;
      if (!page || !Array.isArray(page.data)) return relay(res, answer);
      const own = await ownEntries(store, res, 'batch', page.data);
      // A page holds this key's batches among those the upstream listed: it may be shorter than `limit`.
      const base = options.baseUrl?.() ?? null;
      const body = { ...page, data: own.map((batch) => withOwnResultsUrl(batch, base)), first_id: own[0]?.id ?? null, last_id: own.at(-1)?.id ?? null };
      relay(res, { ...answer, body: Buffer.from(JSON.stringify(body)) });
    }),

    retrieve: wrap(async (req, res) => {
      const pin = await ownBatch(res, String(req.params.id));
      const answer = await call(req, res, 'GET', `/v1/messages/batches/${encodeURIComponent(pin.id)}`, pinnedTarget(pin));
      if (answer.status === 200 && parseJson(answer)?.processing_status === 'ended' && !(pin.data as BatchPinData).billed) await bill(req, res, pin);
      relayBatch(res, answer);
    }),

    cancel: wrap(async (req, res) => {
      const pin = await ownBatch(res, String(req.params.id));
      relayBatch(res, await call(req, res, 'POST', `/v1/messages/batches/${encodeURIComponent(pin.id)}/cancel`, pinnedTarget(pin)));
    }),

    results: wrap(async (req, res) => {
      const pin = await ownBatch(res, String(req.params.id));
      relay(res, await bill(req, res, pin));
    }),

    remove: wrap(async (req, res) => {
      const pin = await ownBatch(res, String(req.params.id));
      if (!(pin.data as BatchPinData).billed) await bill(req, res, pin);
      const answer = await call(req, res, 'DELETE', `/v1/messages/batches/${encodeURIComponent(pin.id)}`, pinnedTarget(pin));
      if (answer.status === 200) await store.deletePin('batch', pin.id);
      relay(res, answer);
    }),
  };
}

/**
 * What a refused batch needs (the 402's words, lib/billing/cap-refusal.ts): all of its worst case
 * `total` (credits, at the batch rate and its hold's price multiplier), nothing of it cut; `largest`: its
 * largest request's input bound part by part.
 */
function batchNeed(total: number, largest: string): CapNeed {
  return {
    minCredits: total,
    words: `this batch may cost up to ${formatCredits(total)} at the batch rate (its largest request ${largest})`,
    toFit: 'To fit, send fewer requests, lower their max_tokens or name fewer files, images or server-tool uses.',
  };
}
