/**
 * The Files API of the fake upstream, as the real one behaves (platform.claude.com/docs/en/build-with-claude/files
 * and the API reference, "Files"):
 * - upload takes multipart/form-data with the file in the part named `file` (anything else: 400
 *   `invalid_request_error`) and answers `{id, type: "file", filename, mime_type, size_bytes, created_at, downloadable: false}`;
 * - only files the upstream itself made can be downloaded: a file a client uploaded answers 400 on `/content`;
 * - list answers `{data, has_more, first_id, last_id}`, newest first; delete answers `{id, type: "file_deleted"}`;
 * - an unknown id is 404 `not_found_error`.
 */
import type { FakeHandler, FakeReply } from './fake-upstream';

export interface FakeFiles {
  handler: FakeHandler;
  /** How many files are held. */
  count(): number;
  /** The size of a file held, in bytes (a fake upstream bills a text file at a token a byte); undefined for none. */
  sizeOf(id: string): number | undefined;
}

/**
 * @param fallback answers every request that is not a file path
 * @param idPrefix starts each file id (two fakes standing for two accounts give distinct ids)
 */
export function createFakeFiles(fallback: FakeHandler, idPrefix = 'file_fake_'): FakeFiles {
  const files = new Map<string, { object: Record<string, unknown>; filename: string; size: number }>();
  let next = 0;
  const json = (status: number, body: unknown): FakeReply => ({ kind: 'json', status, body });
  const error = (status: number, type: string, message: string) => json(status, { type: 'error', error: { type, message } });
  const handler: FakeHandler = (request) => {
    const match = /^\/v1\/files(?:\/([^/?]+))?(\/content)?(?:\?.*)?$/.exec(request.url);
    if (!match) return fallback(request);
    const [, id, content] = match;
    if (!id && request.method === 'POST') {
      const type = String(request.headers['content-type'] ?? '');
      const text = request.raw.toString('latin1');
      const part = /content-disposition: form-data; name="file"; filename="([^"]*)"\r\n(?:content-type: ([^\r]*)\r\n)?\r\n/i.exec(text);
      if (!type.startsWith('multipart/form-data') || !part) return error(400, 'invalid_request_error', 'file: a multipart part named "file" is required');
      const boundary = /boundary=([^;]+)/.exec(type)?.[1] ?? '';
      const start = part.index + part[0].length;
      const end = text.indexOf(`\r\n--${boundary}`, start);
      const fileId = `${idPrefix}${String((next += 1)).padStart(4, '0')}`;
      const object = {
        id: fileId, type: 'file', filename: part[1], mime_type: part[2] ?? 'application/octet-stream',
        size_bytes: end - start, created_at: new Date().toISOString(), downloadable: false,
      };
      files.set(fileId, { object, filename: part[1], size: end - start });
      return json(200, object);
    }
    if (!id) {
      const data = [...files.values()].map((f) => f.object).reverse();
      return json(200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
    }
    const file = files.get(id);
    if (!file) return error(404, 'not_found_error', `file ${id} not found`);
    if (content) return error(400, 'invalid_request_error', `file ${id} was uploaded, not created by the API, and cannot be downloaded`);
    if (request.method === 'DELETE') {
      files.delete(id);
      return json(200, { id, type: 'file_deleted' });
    }
    return json(200, file.object);
  };
  return { handler, count: () => files.size, sizeOf: (id) => files.get(id)?.size };
}
