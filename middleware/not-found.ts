/**
 * Path check, last in the route table: unknown paths get 404, with the `/v1/...` path suggested
 * when the client left the prefix out (a base URL configured without or with a doubled `/v1`).
 */
import type { RequestHandler } from 'express';
import { errors } from '../lib/errors';

export interface NotFoundOptions {
  /** Known routes as `METHOD /path`, e.g. `POST /v1/messages`. */
  routes: string[];
}

export function createNotFound(options: NotFoundOptions): RequestHandler {
  const byPath = new Map<string, string[]>();
  for (const route of options.routes) {
    const [method, path] = route.split(' ');
    byPath.set(path, [...(byPath.get(path) ?? []), method]);
  }
  return (req, _res, next) => {
    const path = req.path.replace(/\/+$/, '') || '/';
    const methods = byPath.get(path);
    if (methods) {
      return next(errors.notFound(`${req.method} ${path} does not exist; use ${methods.map((m) => `${m} ${path}`).join(' or ')}`));
    }
    const candidates = [`/v1${path}`, path.replace(/^\/v1\/v1\//, '/v1/')];
    const suggestion = candidates.find((candidate) => byPath.has(candidate));
    const hint = suggestion
      ? `; did you mean ${suggestion}? Native clients use the gateway's base URL, chat-completions clients the base URL plus /v1`
      : '; the API lives under /v1 (POST /v1/messages, POST /v1/chat/completions, GET /v1/models)';
    next(errors.notFound(`no route for ${req.method} ${path.slice(0, 200)}${hint}`));
  };
}
