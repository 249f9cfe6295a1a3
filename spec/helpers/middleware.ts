/** Running one middleware as a function: fake req/res, resolves with what it passed to next(). */
import type { RequestHandler } from 'express';
import type { RequestContext } from '../../lib/pipeline/context';

export interface FakeRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string | string[] | undefined>;
  body?: unknown;
}

export function fakeContext(overrides: Partial<RequestContext> = {}): RequestContext {
  return { requestId: 'req_test', format: 'native', route: 'POST /v1/messages', startedAt: process.hrtime.bigint(), stream: false, warnings: [], tags: {}, ...overrides };
}

/** Calls the handler; resolves with the error given to next (undefined when it passed) and the context. */
export async function runMiddleware(handler: RequestHandler, request: FakeRequest, ctx = fakeContext()): Promise<{ error: any; ctx: RequestContext }> {
  const headers = request.headers ?? {};
  // What Node gives as IncomingMessage.rawHeaders: [name, value, name, value, ...], a repeated header
  // (an array value here) once per value.
  const rawHeaders = Object.entries(headers).flatMap(([name, value]) =>
    value === undefined ? [] : (Array.isArray(value) ? value : [value]).flatMap((one) => [name, one]));
  const req = { method: 'POST', path: '/v1/messages', ...request, headers, rawHeaders } as any;
  const res = { locals: { gateway: ctx }, setHeader() {} } as any;
  const error = await new Promise((resolve) => {
    void handler(req, res, (err?: unknown) => resolve(err));
  });
  return { error, ctx };
}
