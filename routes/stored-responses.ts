/**
 * `GET /v1/responses/{id}` and `DELETE /v1/responses/{id}`: a stored response (kept by the Responses
 * route with `store: true`) as the client received it, or its deletion. Only the key that made it
 * sees it: for any other key, as for an unknown or expired id, the answer is 404.
 */
import type { RequestHandler } from 'express';
import { getContext } from '../lib/pipeline/context';
import { GatewayError } from '../lib/http/errors';
import { sendJson } from '../lib/http/json-reply';
import type { ResponseStore, StoredResponse } from '../lib/store/types';

export interface StoredResponsesOptions {
  store: ResponseStore;
}

function notFound(id: string): GatewayError {
  return new GatewayError(404, 'not_found_error', `no stored response "${id.slice(0, 100)}" for this key`, { chatCode: 'not_found' });
}

/** The stored response `req.params.id` names, if this key made it (only `resp_` ids: the store also keeps the chat route's thinking). */
async function findOwn(store: ResponseStore, id: string, keyId: string): Promise<StoredResponse> {
  if (!id.startsWith('resp_')) throw notFound(id);
  const stored = await store.getResponse(id);
  if (!stored || stored.keyId !== keyId) throw notFound(id);
  return stored;
}

/** The GET and DELETE handlers. */
export function createStoredResponses(options: StoredResponsesOptions): { read: RequestHandler; remove: RequestHandler } {
  const { store } = options;
  return {
    async read(req, res, next) {
      try {
        const stored = await findOwn(store, String(req.params.id), getContext(res).key!.id);
        sendJson(res, 200, stored.response);
      } catch (err) {
        next(err);
      }
    },
    async remove(req, res, next) {
      try {
        const id = String(req.params.id);
        await findOwn(store, id, getContext(res).key!.id);
        await store.deleteResponse(id);
        sendJson(res, 200, { id, object: 'response', deleted: true });
      } catch (err) {
        next(err);
      }
    },
  };
}
