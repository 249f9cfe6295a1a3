/**
 * Responses route: the stored conversation `previous_response_id` names, loaded after the key and
 * model checks and before the admission, because it goes upstream with the request: the credit hold
 * (middleware/credit-reservation.ts) counts its bytes as input, and the expanded conversation (body +
 * stored items) is held to the same size limit as a body (413 past it).
 */
import type { RequestHandler } from 'express';
import { getContext } from '../lib/pipeline/context';
import { errors, GatewayError } from '../lib/http/errors';
import type { ResponseStore } from '../lib/store/types';

export interface PreviousResponseOptions {
  store: ResponseStore;
  /** Largest expanded conversation (the body limit, config `limits.bodyBytes`), in bytes; read per request. */
  limitBytes: () => number;
}

/**
 * @throws (to next) GatewayError 404 `previous_response_not_found` when no stored response of this key
 *   has the id; 413 when the body and the stored conversation together pass `limitBytes`
 */
export function createPreviousResponse(options: PreviousResponseOptions): RequestHandler {
  const { store } = options;
  return async function previousResponse(req, res, next) {
    try {
      const id = (req.body as { previous_response_id?: unknown }).previous_response_id;
      if (typeof id !== 'string') return next();
      const ctx = getContext(res);
      // Only `resp_` ids: the store also keeps the chat route's thinking under other ids.
      const stored = id.startsWith('resp_') ? await store.getResponse(id) : null;
      if (!stored || stored.keyId !== ctx.key!.id) {
        throw new GatewayError(404, 'not_found_error', `previous_response_id: no stored response "${id.slice(0, 100)}" for this key (responses are kept only with store: true, for a limited time)`, {
          chatCode: 'previous_response_not_found', param: 'previous_response_id',
        });
      }
      const items = Array.isArray(stored.items) ? stored.items : [];
      const bytes = Buffer.byteLength(JSON.stringify(items));
      const limit = options.limitBytes();
      if ((ctx.bodyBytes ?? 0) + bytes > limit) {
        throw errors.tooLarge(`the request with the conversation previous_response_id names (${bytes} bytes stored) is larger than the limit of ${limit} bytes; start a new conversation`);
      }
      ctx.previous = { id: stored.id, items, bytes, sessionId: stored.sessionId };
      next();
    } catch (err) {
      next(err);
    }
  };
}
