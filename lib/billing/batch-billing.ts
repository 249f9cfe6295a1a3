/**
 * Billing of a Message Batch (routes/message-batches.ts): the credit holds taken when it was
 * created (one per catalogue model in it, each the worst case of that model's requests at the batch
 * rate), and their settlement from the batch's results. Each hold settles once in the store (one Redis
 * script), so a batch is billed once whichever instance reads its results first, and however often.
 *
 * Results: JSON Lines, one `{custom_id, result: {type, message?}}` per request; only `succeeded`
 * results are billed (errored, canceled and expired requests are not), each at its model's prices with
 * `service_tier: "batch"` (0.5x, lib/billing/pricing.ts). Source: platform.claude.com/docs/en/build-with-claude/batch-processing.
 */
import type { Catalogue } from '../config/catalogue';
import type { Logger } from '../observability/logger';
import { priceUsage } from './pricing';
import type { LedgerStore, PinnedObject, RequestLogRecord, Reservation, ResponseStore } from '../store/types';
import { emptyUsage, mergeNativeUsage, type Usage } from '../../translators/usage';

/** What the gateway keeps of a batch (the pin's `data`). */
export interface BatchPinData {
  [field: string]: unknown;
  /** The credit holds, one per catalogue model of the batch's requests. */
  holds: Array<{ model: string; reservation: Reservation }>;
  /** `custom_id` -> canonical model ID of that request. */
  models: Record<string, string>;
  /** Set once the holds are settled. */
  billed: boolean;
  /** Id of the upstream target (account) that created the batch: every later call goes there. */
  target?: string;
  /** That target's `priceMultiplier` when it is not 1: its results are priced that many times. */
  priceMultiplier?: number;
}

/** The summed usage and credits of one model's results. */
interface ModelTotals {
  usage: Usage;
  credits: number;
  requests: number;
}

/**
 * Sum the billed usage of a batch's results (JSONL bytes, UTF-8) per canonical model; malformed lines
 * are skipped. Read a line at a time from the bytes as received: a batch of 100,000 results is hundreds
 * of MB, held once (the reply relayed to the client) rather than again as text and as an array of lines.
 */
export function sumBatchResults(results: Buffer, data: BatchPinData, catalogue: Catalogue): Map<string, ModelTotals> {
  const totals = new Map<string, ModelTotals>();
  for (let start = 0; start < results.length;) {
    const newline = results.indexOf(0x0a, start);
    const end = newline === -1 ? results.length : newline;
    const line = results.toString('utf8', start, end);
    start = end + 1;
    if (!line.trim()) continue;
    let entry: { custom_id?: unknown; result?: { type?: unknown; message?: { usage?: unknown } } };
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (entry?.result?.type !== 'succeeded' || typeof entry.custom_id !== 'string') continue;
    const modelId = Object.hasOwn(data.models, entry.custom_id) ? data.models[entry.custom_id] : undefined;
    const model = modelId === undefined ? undefined : catalogue.resolve(modelId);
    if (!model) continue;
    const usage = mergeNativeUsage(emptyUsage(), entry.result.message?.usage as never);
    usage.service_tier = 'batch';
    const sum = totals.get(model.id) ?? { usage: emptyUsage(), credits: 0, requests: 0 };
    sum.usage.input_tokens += usage.input_tokens;
    sum.usage.output_tokens += usage.output_tokens;
    sum.usage.cache_creation_input_tokens += usage.cache_creation_input_tokens;
    sum.usage.cache_read_input_tokens += usage.cache_read_input_tokens;
    sum.credits += priceUsage(model, usage) * (data.priceMultiplier ?? 1);
    sum.requests += 1;
    totals.set(model.id, sum);
  }
  return totals;
}

/**
 * Settle every hold of a batch from its results: each model's hold with the usage of its succeeded
 * requests (0 when none), with one request log record per model. A hold already settled (by another
 * instance) changes nothing. Marks the pin billed.
 */
export async function settleBatch(store: LedgerStore & ResponseStore, catalogue: Catalogue, pin: PinnedObject, results: Buffer,
  log: { requestId: string; keyGroup: string | null; at: number; ttlMs: number; logger?: Logger }): Promise<void> {
  const data = pin.data as BatchPinData;
  const totals = sumBatchResults(results, data, catalogue);
  for (const { model, reservation } of data.holds) {
    const sum = totals.get(model) ?? { usage: emptyUsage(), credits: 0, requests: 0 };
    const record: RequestLogRecord = {
      time: log.at, requestId: log.requestId, keyId: pin.keyId, keyGroup: log.keyGroup, route: `BATCH ${pin.id}`, model,
      status: 200, stopReason: null, inputTokens: sum.usage.input_tokens, outputTokens: sum.usage.output_tokens,
      cacheCreationInputTokens: sum.usage.cache_creation_input_tokens, cacheReadInputTokens: sum.usage.cache_read_input_tokens,
      credits: sum.credits, firstByteMs: null, durationMs: 0, streamed: false, clientAborted: false,
      sessionId: null, agentId: null, upstreamTarget: data.target ?? null,
    };
    await store.settleCredits(reservation, {
      model, inputTokens: sum.usage.input_tokens, outputTokens: sum.usage.output_tokens,
      cacheCreationInputTokens: sum.usage.cache_creation_input_tokens, cacheReadInputTokens: sum.usage.cache_read_input_tokens,
      credits: sum.credits, at: log.at, log: record,
    });
  }
  await store.savePin({ ...pin, data: { ...data, billed: true } }, log.ttlMs);
  log.logger?.info({ message: `message batch ${pin.id} billed`, batch_id: pin.id, key_id: pin.keyId });
}

/** Release holds taken for a batch the upstream did not create: nothing was used. */
export async function releaseHolds(store: LedgerStore & ResponseStore, holds: BatchPinData['holds']): Promise<void> {
  for (const { model, reservation } of holds) {
    await store.settleCredits(reservation, { model, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0 });
  }
}
