/**
 * What the routes of objects the upstream keeps for the gateway (Message Batches, Files) share beside
 * the upstream call (lib/upstream/pinned-call.ts): the relay of a reply to the client, and the lookup of
 * an object pinned to the request's key (a pin of another key, or none, is a 404).
 */
import type { Request, Response } from 'express';
import { getContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import type { PinnedObject, ResponseStore } from '../lib/store/types';
import { pinnedTarget, type UpstreamAnswer } from '../lib/upstream/pinned-call';

/** Write an upstream reply to the client as it came (status, content type, body). */
export function relay(res: Response, answer: UpstreamAnswer): void {
  res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': String(answer.body.length) });
  res.end(answer.body);
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
