/**
 * Files on the native route (platform.claude.com/docs/en/build-with-claude/files):
 *   POST   /v1/files              upload (multipart/form-data, passed through), at most `limits.fileBytes`,
 *                                  at the slow-client guard's rate (lib/read-upload.ts)
 *   GET    /v1/files              list: only this key's files
 *   GET    /v1/files/:id          metadata
 *   GET    /v1/files/:id/content  download
 *   DELETE /v1/files/:id          delete
 * Each file is pinned to the key that uploaded it: for another key it does not exist (404), and a
 * Messages (or Message Batches) request naming another key's file in a `file_id` is refused with 404
 * before the upstream (`createFileAccessCheck`), so no key reads what another uploaded.
 */
import type { Request, RequestHandler, Response } from 'express';
import { getContext, type RequestContext } from '../lib/context';
import { errors } from '../lib/errors';
import { readUpload, type UploadLimits } from '../lib/read-upload';
import type { PinnedObject, ResponseStore } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';
import type { FileFacts } from './input-bound';
import { callUpstream, cursorTarget, ownEntries, ownPin, parseJson, pinnedTarget, relay } from './pinned-upstream';

/** How long a file stays pinned: files are kept upstream until deleted. */
export const FILE_PIN_TTL_MS = 400 * 24 * 3600_000;

export interface FilesOptions {
  store: ResponseStore;
  /** The upstream of the request's key group (a refusal when it has no native upstream). */
  upstreamFor: (ctx: RequestContext) => UpstreamClient;
  /** Largest upload accepted and the slow-client guard (config `limits`), read per request. */
  uploadLimits: () => UploadLimits;
}

/** Build the five handlers. */
export function createFiles(options: FilesOptions): Record<'upload' | 'list' | 'metadata' | 'content' | 'remove', RequestHandler> {
  const { store } = options;
  const upstreamOf = (res: Response) => options.upstreamFor(getContext(res));
  const ownFile = (res: Response, id: string) => ownPin(store, res, 'file', id, 'file');
  const wrap = (handler: (req: Request, res: Response) => Promise<void>): RequestHandler => (req, res, next) => {
    handler(req, res).catch(next);
  };
  const path = (id: string, tail = '') => `/v1/files/${encodeURIComponent(id)}${tail}`;

  return {
    upload: wrap(async (req, res) => {
      const type = req.headers['content-type'];
      if (typeof type !== 'string' || !type.toLowerCase().startsWith('multipart/form-data')) {
        throw errors.unsupportedMediaType('a file upload is multipart/form-data with the file in the part named "file"');
      }
      const body = await readUpload(req, res, options.uploadLimits());
      const answer = await callUpstream(upstreamOf(res), req, 'POST', '/v1/files', { body, contentType: type });
      const file = answer.status === 200 ? parseJson(answer) : null;
      if (typeof file?.id === 'string') {
        // Its size and type bound what the upstream bills a request naming it (middleware/input-bound.ts).
        const data = { target: answer.target, sizeBytes: file.size_bytes, mimeType: file.mime_type };
        await store.savePin({ kind: 'file', id: file.id, keyId: getContext(res).key!.id, data }, FILE_PIN_TTL_MS);
      }
      relay(res, answer);
    }),

    list: wrap(async (req, res) => {
      const query = new URLSearchParams(req.query as Record<string, string>).toString();
      const target = await cursorTarget(store, res, 'file', req.query);
      const answer = await callUpstream(upstreamOf(res), req, 'GET', `/v1/files${query ? `?${query}` : ''}`, { target });
      const page = answer.status === 200 ? parseJson(answer) : null;
      if (!page || !Array.isArray(page.data)) return relay(res, answer);
      // A page holds this key's files among those the upstream listed: it may be shorter than `limit`.
      const own = await ownEntries(store, res, 'file', page.data);
      relay(res, { ...answer, body: Buffer.from(JSON.stringify({ ...page, data: own, first_id: own[0]?.id ?? null, last_id: own.at(-1)?.id ?? null })) });
    }),

    metadata: wrap(async (req, res) => {
      const pin = await ownFile(res, String(req.params.id));
      relay(res, await callUpstream(upstreamOf(res), req, 'GET', path(pin.id), { target: pinnedTarget(pin) }));
    }),

    content: wrap(async (req, res) => {
      const pin = await ownFile(res, String(req.params.id));
      relay(res, await callUpstream(upstreamOf(res), req, 'GET', path(pin.id, '/content'), { target: pinnedTarget(pin) }));
    }),

    remove: wrap(async (req, res) => {
      const pin = await ownFile(res, String(req.params.id));
      const answer = await callUpstream(upstreamOf(res), req, 'DELETE', path(pin.id), { target: pinnedTarget(pin) });
      if (answer.status === 200) await store.deletePin('file', pin.id);
      relay(res, answer);
    }),
  };
}

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
 * them: a request naming files goes to that target only.
 * @param held the target already required (the other requests of a batch), if any
 * @param facts where to put what the pins know of each file (size, type), when given
 * @returns the holding target; `held` when the body names no file of a recorded target
 * @throws GatewayError 404 for a file the key did not upload; 400 when the files are held by different targets
 */
export async function checkFileAccess(store: ResponseStore, keyId: string, body: unknown, where = 'file_id', held?: string,
  facts?: Map<string, FileFacts>): Promise<string | undefined> {
  let target = held;
  for (const id of referencedFileIds(body)) {
    const pin = await store.getPin('file', id);
    if (!pin || pin.keyId !== keyId) throw errors.notFound(`${where}: no file "${id.slice(0, 100)}" for this key`);
    facts?.set(id, fileFactsOf(pin));
    const holder = pinnedTarget(pin);
    if (holder !== undefined && target !== undefined && holder !== target) {
      throw errors.invalidRequest(`${where}: file "${id.slice(0, 100)}" is held by upstream target "${holder}", another file of this request by "${target}"; one request can use the files of one upstream account only`);
    }
    target = holder ?? target;
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
