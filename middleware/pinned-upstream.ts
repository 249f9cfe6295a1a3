/**
 * What the routes of objects the upstream keeps for the gateway (Message Batches, Files) share: one
 * upstream call whose whole reply is read, the relay of that reply to the client, and the lookup of
 * an object pinned to the request's key (a pin of another key, or none, is a 404).
 *
 * Such an object lives in one upstream account: its pin records the target that created it
 * (`data.target`, the UpstreamReply's `target`), and every later call about it goes to that target
 * only (UpstreamRoute.target), never to another account of the pool, which would answer 404.
 */
import type { Request, Response } from 'express';
import { getContext } from '../lib/context';
import { errors } from '../lib/errors';
import type { PinnedObject, ResponseStore } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';
import type { CancelSignal } from '../lib/upstream/attempt';

/** An upstream reply read whole. */
export interface UpstreamAnswer {
  status: number;
  contentType: string;
  body: Buffer;
  /** Id of the upstream target that answered (lib/upstream/target.ts). */
  target?: string;
}

/** The native headers such a call carries upstream: the version, and the beta flags the client asked for. */
function forwardedHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/** The options of one upstream call. */
export interface UpstreamCall {
  /** The JSON body (or `contentType`'s); none for a GET or DELETE. */
  body?: Buffer;
  /** Default `application/json`. */
  contentType?: string;
  /** The only target the call may go to (the pin's `target`); absent: the pool's usual choice. */
  target?: string;
  /** Cancels the call (an AbortSignal); absent: bounded by the upstream timeout only. */
  signal?: CancelSignal;
}

/**
 * Send `method path` upstream and read the reply.
 * @throws GatewayError 502/504 when the upstream cannot be reached or does not answer in time, 502 when
 *   `call.target` is not configured any more
 */
export async function callUpstream(upstream: UpstreamClient, req: Request, method: string, path: string, call: UpstreamCall = {}): Promise<UpstreamAnswer> {
  const { body, contentType, target } = call;
  const reply = await upstream.send({ method, path, headers: forwardedHeaders(req), body, contentType }, call.signal, target === undefined ? undefined : { target });
  const chunks: Buffer[] = [];
  for await (const chunk of reply.response) chunks.push(chunk as Buffer);
  return {
    status: reply.response.statusCode ?? 502, contentType: String(reply.response.headers['content-type'] ?? 'application/json'),
    body: Buffer.concat(chunks), target: reply.target,
  };
}

/** The upstream target a pin's object lives on; undefined for a pin made before targets were recorded. */
export function pinnedTarget(pin: PinnedObject): string | undefined {
  return typeof pin.data.target === 'string' ? pin.data.target : undefined;
}

/** Write an upstream reply to the client as it came (status, content type, body). */
export function relay(res: Response, answer: UpstreamAnswer): void {
  res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': String(answer.body.length) });
  res.end(answer.body);
}

/** The reply's JSON body, or null. */
export function parseJson(answer: UpstreamAnswer): Record<string, any> | null {
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    return null;
  }
}

/** The request key's pin of `kind` `id`; 404 (`what` named) for an unknown id and for another key's. */
export async function ownPin(store: ResponseStore, res: Response, kind: PinnedObject['kind'], id: string, what: string): Promise<PinnedObject> {
  const pin = await store.getPin(kind, id);
  if (!pin || pin.keyId !== getContext(res).key!.id) throw errors.notFound(`no ${what} "${id.slice(0, 100)}" for this key`);
  return pin;
}

/**
 * The target a list page goes to: the one holding the object its cursor names (`after_id` or
 * `before_id`, when the object is the request key's), so the pages of one listing come from one
 * account; undefined (the usual choice) for a first page.
 */
export async function cursorTarget(store: ResponseStore, res: Response, kind: PinnedObject['kind'], query: Request['query']): Promise<string | undefined> {
  const cursor = query.after_id ?? query.before_id;
  if (typeof cursor !== 'string') return undefined;
  const pin = await store.getPin(kind, cursor);
  return pin && pin.keyId === getContext(res).key!.id ? pinnedTarget(pin) : undefined;
}

/** The entries of an upstream list page (`data`) pinned to the request's key, in order. */
export async function ownEntries(store: ResponseStore, res: Response, kind: PinnedObject['kind'], data: unknown[]): Promise<any[]> {
  const keyId = getContext(res).key!.id;
  const own = [];
  for (const entry of data) if ((await store.getPin(kind, String((entry as { id?: unknown })?.id)))?.keyId === keyId) own.push(entry);
  return own;
}
