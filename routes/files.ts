/**
 * Files on the native route (platform.claude.com/docs/en/build-with-claude/files):
 *   POST   /v1/files              upload (multipart/form-data, passed through), at most `limits.fileBytes`,
 *                                  at the slow-client guard's rate (lib/http/read-upload.ts)
 *   GET    /v1/files              list: only this key's files
 *   GET    /v1/files/:id          metadata
 *   GET    /v1/files/:id/content  download
 *   DELETE /v1/files/:id          delete
 * Each file is pinned to the key that uploaded it: for another key it does not exist (404), and a
 * Messages (or Message Batches) request naming another key's file in a `file_id` is refused with 404
 * before the upstream (`createFileAccessCheck`), so no key reads what another uploaded.
 */
import type { Request, RequestHandler, Response } from 'express';
import { getContext, type RequestContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { readUpload, type UploadLimits } from '../lib/http/read-upload';
import type { ResponseStore } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';
import { callUpstream, parseJson, pinnedTarget } from '../lib/upstream/pinned-call';
import { cursorTarget, ownEntries, ownPin, relay } from './pinned-upstream';

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
        // Its size and type bound what the upstream bills a request naming it (lib/billing/input-bound.ts).
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
