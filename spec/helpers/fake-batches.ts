/**
 * The Message Batches API of the fake upstream, as the real one behaves
 * (platform.claude.com/docs/en/build-with-claude/batch-processing and the API reference, "Message Batches"):
 * - create answers a `message_batch` object `in_progress` with `request_counts`, `results_url: null`;
 *   a `custom_id` used twice in one batch is refused (400 `invalid_request_error`: "custom_id must be
 *   unique within a batch"), as is a batch of no request or of more than 100,000;
 * - a batch ends when the test says (`end`): `processing_status: "ended"`, `ended_at`, `results_url`, and
 *   `request_counts` by outcome; a batch being cancelled ends with its requests `canceled`;
 * - results are JSON Lines, one `{custom_id, result}` per request, only once the batch has ended (before:
 *   404 `not_found_error`); `result.type` is `succeeded` (with the `message`, whose usage says
 *   `service_tier: "batch"`), `errored` (with an `error` response), `canceled` or `expired` (API
 *   reference, "Retrieve Message Batch results");
 * - cancel answers the batch `canceling` with `cancel_initiated_at` (API reference, "Cancel a Message Batch");
 * - only an ended batch can be deleted (else 400), answering `{id, type: "message_batch_deleted"}`;
 * - list answers `{data, has_more, first_id, last_id}`, newest first, `limit` (1 to 1000, default 20) at a
 *   time, from just after `after_id` (API reference, "List Message Batches": `after_id` "returns the page
 *   of results immediately after this object"); an `after_id` this account does not hold is not
 *   documented: the fake answers an empty page.
 */
import { nativeMessage, reportedUsage, type FakeHandler, type FakeReply, type RecordedRequest } from './fake-upstream';

/** How one request of a batch ended (the `result.type` of its results line). */
export type BatchOutcome = 'succeeded' | 'errored' | 'canceled' | 'expired';

export interface FakeBatches {
  /** The handler: batch paths here, every other request to `fallback`. */
  handler: FakeHandler;
  /**
   * End a batch, or all of them. Each request's outcome is `outcome(custom_id, index)`; by default
   * `succeeded`, or `canceled` in a batch being cancelled.
   */
  end(id?: string, outcome?: (customId: string, index: number) => BatchOutcome): void;
  /** The create bodies received, by batch id. */
  created: Map<string, any>;
  /** How many times each batch's results were read. */
  resultReads: Map<string, number>;
}

/** Tokens each batch request is billed: 100 input, and its max_tokens up to 50 output. */
export function batchRequestTokens(params: any): { input_tokens: number; output_tokens: number } {
  return { input_tokens: 100, output_tokens: Math.min(50, Number(params?.max_tokens) || 50) };
}

/**
 * @param fallback answers every request that is not a batch path
 * @param idPrefix starts each batch id (two fakes standing for two accounts give distinct ids)
 */
export function createFakeBatches(fallback: FakeHandler, idPrefix = 'msgbatch_fake_'): FakeBatches {
  const batches = new Map<string, { object: Record<string, any>; requests: any[]; outcomes: BatchOutcome[] }>();
  const created = new Map<string, any>();
  const resultReads = new Map<string, number>();
  let next = 0;
  const json = (status: number, body: unknown): FakeReply => ({ kind: 'json', status, body });
  const error = (status: number, type: string, message: string) => json(status, { type: 'error', error: { type, message } });

  function create(request: RecordedRequest): FakeReply {
    const requests = request.body?.requests;
    if (!Array.isArray(requests) || requests.length === 0 || requests.length > 100_000) return error(400, 'invalid_request_error', 'requests: must hold 1 to 100000 requests');
    const ids = new Set(requests.map((r: any) => r?.custom_id));
    if (ids.size !== requests.length) return error(400, 'invalid_request_error', 'custom_id must be unique within a batch');
    const id = `${idPrefix}${String((next += 1)).padStart(4, '0')}`;
    const object = {
      id, type: 'message_batch', processing_status: 'in_progress',
      request_counts: { processing: requests.length, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
      ended_at: null, created_at: new Date().toISOString(), expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      cancel_initiated_at: null, archived_at: null, results_url: null,
    };
    batches.set(id, { object, requests, outcomes: [] });
    created.set(id, request.body);
    return json(200, object);
  }

  function results(id: string): FakeReply {
    const batch = batches.get(id)!;
    if (batch.object.processing_status !== 'ended') return error(404, 'not_found_error', `results of ${id} are not available until it has ended`);
    resultReads.set(id, (resultReads.get(id) ?? 0) + 1);
    const lines = batch.requests.map((r, i) => JSON.stringify({ custom_id: r.custom_id, result: resultOf(r, batch.outcomes[i]) }));
    return { kind: 'text', text: `${lines.join('\n')}\n`, contentType: 'application/x-jsonl' };
  }

  function resultOf(request: any, outcome: BatchOutcome): Record<string, unknown> {
    if (outcome === 'succeeded') {
      return { type: 'succeeded', message: { ...nativeMessage('ok', undefined, request.params.model), usage: reportedUsage(request.params, batchRequestTokens(request.params), 'batch') } };
    }
    if (outcome === 'errored') {
      return { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: 'messages.0.content: Field required' }, request_id: null } };
    }
    return { type: outcome };
  }

  const handler: FakeHandler = (request) => {
    const match = /^\/v1\/messages\/batches(?:\/([^/?]+))?(\/results|\/cancel)?(?:\?.*)?$/.exec(request.url);
    if (!match) return fallback(request);
    const [, id, action] = match;
    if (!id) {
      if (request.method === 'POST') return create(request);
      const query = new URL(request.url, 'http://fake').searchParams;
      const all = [...batches.values()].map((b) => b.object).reverse();
      const after = query.get('after_id');
      const from = after === null ? 0 : all.findIndex((b) => b.id === after) + 1 || all.length;
      const limit = Number(query.get('limit') ?? 20);
      const data = all.slice(from, from + limit);
      return json(200, { data, has_more: from + limit < all.length, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
    }
    const batch = batches.get(id);
    if (!batch) return error(404, 'not_found_error', `batch ${id} not found`);
    if (action === '/results') return results(id);
    if (action === '/cancel') {
      batch.object.processing_status = 'canceling';
      batch.object.cancel_initiated_at = new Date().toISOString();
      return json(200, batch.object);
    }
    if (request.method === 'DELETE') {
      if (batch.object.processing_status !== 'ended') return error(400, 'invalid_request_error', `batch ${id} has not ended and cannot be deleted`);
      batches.delete(id);
      return json(200, { id, type: 'message_batch_deleted' });
    }
    return json(200, batch.object);
  };

  return {
    handler,
    created,
    resultReads,
    end(id, outcome) {
      for (const [batchId, batch] of batches) {
        if (id !== undefined && batchId !== id) continue;
        const fallbackOutcome: BatchOutcome = batch.object.processing_status === 'canceling' ? 'canceled' : 'succeeded';
        batch.outcomes = batch.requests.map((r, i) => outcome?.(r.custom_id, i) ?? fallbackOutcome);
        const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 };
        for (const type of batch.outcomes) counts[type] += 1;
        Object.assign(batch.object, {
          processing_status: 'ended', ended_at: new Date().toISOString(), // The API gives an absolute URL of its own host: the gateway must never relay it.
          results_url: `https://api.anthropic.com/v1/messages/batches/${batchId}/results`,
          request_counts: counts,
        });
      }
    },
  };
}
