/**
 * The file access step of the Messages routes (and of a batch's requests): every file a body names, at
 * any depth, must be one the request's key uploaded (routes/files.ts pins each upload to its key);
 * another key's file is a 404 before the upstream, as a direct reference to it is. A request naming
 * files goes to the upstream target (account) that holds them.
 */
import type { RequestHandler } from 'express';
import { getContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import type { PinnedObject, ResponseStore } from '../lib/store/types';
import { pinnedTarget } from '../lib/upstream/pinned-call';
import type { FileFacts } from '../lib/billing/input-bound';

/**
 * The `file_id`s a Messages body names, at any depth of `system` and `messages[].content`: file sources
 * of documents and images (`source: {type: "file", file_id}`), also inside a document's
 * `source.content`, a `tool_result`'s or a web fetch result's content, `container_upload` blocks and
 * the output files of code execution results (the Messages API reference, "Files API" and content
 * block params). Every member named `file_id` holding a string counts, whatever block holds it, so a
 * block type added upstream is checked too; only the `input` of a `*tool_use` block is skipped: it is
 * the tool's own arguments, which the upstream never resolves.
 * Walked with an explicit stack: a body nested 20,000 deep costs memory in proportion to its size,
 * never the call stack.
 * @returns each id once, in no particular order
 */
export function referencedFileIds(body: unknown): string[] {
  const ids = new Set<string>();
  const { messages, system } = (body ?? {}) as { messages?: unknown; system?: unknown };
  const pending: unknown[] = [messages, system];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) if (item !== null && typeof item === 'object') pending.push(item);
      continue;
    }
    const fields = node as Record<string, unknown>;
    const skipInput = typeof fields.type === 'string' && fields.type.endsWith('tool_use');
    for (const name in fields) {
      const value = fields[name];
      if (typeof value === 'string') {
        if (name === 'file_id') ids.add(value);
      } else if (value !== null && typeof value === 'object' && !(skipInput && name === 'input')) {
        pending.push(value);
      }
    }
  }
  return [...ids];
}

/** What a file's pin says of its size and type (pins made before they were kept: nothing). */
export function fileFactsOf(pin: PinnedObject): FileFacts {
  const { sizeBytes, mimeType } = pin.data as { sizeBytes?: unknown; mimeType?: unknown };
  return { sizeBytes: typeof sizeBytes === 'number' ? sizeBytes : undefined, mimeType: typeof mimeType === 'string' ? mimeType : undefined };
}

/**
 * Check that every file a body names is the key's own, and find the upstream target (account) holding
 * them: a request naming files goes to that target only. One store call (`checkFilesOf`).
 * @param held the target already required, if any
 * @param facts where to put what the pins know of each file (size, type), when given
 * @returns the holding target; `held` when the body names no file of a recorded target
 * @throws GatewayError 404 for a file the key did not upload; 400 when the files are held by different targets
 */
export function checkFileAccess(store: ResponseStore, keyId: string, body: unknown, where = 'file_id', held?: string,
  facts?: Map<string, FileFacts>): Promise<string | undefined> {
  return checkFilesOf(store, keyId, [{ body, where }], facts, held);
}

/**
 * `checkFileAccess` for several bodies at once (each request of a batch): the pins of every file they
 * name are read in one store call, then each body is checked in order, so the error names the first
 * body (`where`) at fault; all the files must be held by one target.
 * @param facts where to put what the pins know of each file (size, type), when given
 * @param held the target already required, if any
 * @returns the holding target; `held` when no body names a file of a recorded target
 * @throws GatewayError 404 for a file the key did not upload; 400 when the files are held by different targets
 */
export async function checkFilesOf(store: ResponseStore, keyId: string, bodies: ReadonlyArray<{ body: unknown; where: string }>,
  facts?: Map<string, FileFacts>, held?: string): Promise<string | undefined> {
  const named = bodies.map(({ body, where }) => ({ where, ids: referencedFileIds(body) }));
  const all = [...new Set(named.flatMap(({ ids }) => ids))];
  if (all.length === 0) return held;
  const pins = await store.getPins('file', all);
  const pinOf = new Map(all.map((id, i) => [id, pins[i]]));
  let target = held;
  for (const { where, ids } of named) {
    for (const id of ids) {
      const pin = pinOf.get(id);
      if (!pin || pin.keyId !== keyId) throw errors.notFound(`${where}: no file "${id.slice(0, 100)}" for this key`);
      facts?.set(id, fileFactsOf(pin));
      const holder = pinnedTarget(pin);
      if (holder !== undefined && target !== undefined && holder !== target) {
        throw errors.invalidRequest(`${where}: file "${id.slice(0, 100)}" is held by upstream target "${holder}", another file of this request by "${target}"; one request can use the files of one upstream account only`);
      }
      target = holder ?? target;
    }
  }
  return target;
}

/**
 * The pipeline step of the Messages routes that runs `checkFileAccess` on the request body and routes
 * a request naming files to the target holding them (`ctx.target`).
 */
export function createFileAccessCheck(store: ResponseStore): RequestHandler {
  return (req, res, next) => {
    // Most requests name no file: no store call, no promise.
    if (referencedFileIds(req.body).length === 0) return next();
    const ctx = getContext(res);
    ctx.files = new Map();
    checkFileAccess(store, ctx.key!.id, req.body, undefined, undefined, ctx.files).then((target) => {
      ctx.target = target;
      next();
    }, next);
  };
}
