/**
 * The fork by key group: hands the request to the handler for its key group's upstream (native proxy,
 * chat translator, chat pass-through, reverse translation). Handlers are built once per group
 * configuration and upstream client, so a reload that changes a group builds new ones while requests
 * in flight finish on the old. Before it, the upstream mark notes that the request passed every step
 * in front of the upstream (createUpstreamMark).
 */
import type { RequestHandler } from 'express';
import type { Catalogue } from '../lib/config/catalogue';
import { getContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { DEFAULT_KEY_GROUP, type KeyGroupConfig } from '../lib/config/key-groups';
import { readAgentId, readSessionId } from '../lib/observability/session-id';

export interface KeyGroupDispatchOptions {
  catalogue: Catalogue;
  /** The handler serving this route for a group (called once per group object; the result is kept). */
  handlerFor(group: KeyGroupConfig): RequestHandler;
}

export function createKeyGroupDispatch(options: KeyGroupDispatchOptions): RequestHandler {
  const handlers = new WeakMap<KeyGroupConfig, RequestHandler>();
  return (req, res, next) => {
    const id = getContext(res).keyGroup ?? DEFAULT_KEY_GROUP;
    const group = options.catalogue.keyGroup(id);
    if (!group) return next(errors.modelNotAllowed(`the key group "${id}" of this key is not configured on this gateway`));
    let handler = handlers.get(group);
    if (!handler) {
      handler = options.handlerFor(group);
      handlers.set(group, handler);
    }
    // The settlement waits for it: a whole reply whose client left is still read and billed.
    const done = handler(req, res, next) as unknown;
    getContext(res).upstreamDone = Promise.resolve(done).catch(() => undefined);
    return done as void;
  };
}

/** A handler that refuses with 400: the route is not served for this key group. */
export function createRouteRefusal(message: string): RequestHandler {
  return (_req, _res, next) => next(errors.invalidRequest(message));
}

/**
 * The last step before a route's upstream step: marks the request as having reached the upstream,
 * so its after-response steps write a request log record (lib/observability/request-log.ts). Requests refused
 * earlier get one only once auth identified their key (0 credits, with the error). It also reads the client's session and agent ids
 * (lib/observability/session-id.ts) for that record: only once every check has passed.
 */
export function createUpstreamMark(): RequestHandler {
  return (req, res, next) => {
    const ctx = getContext(res);
    ctx.upstreamReached = true;
    ctx.sessionId = readSessionId(req.headers, req.body);
    ctx.agentId = readAgentId(req.headers);
    next();
  };
}
