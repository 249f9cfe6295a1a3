/**
 * Path check, last in the route table: a known path asked with another method gets 405 with `Allow`
 * (RFC 9110 §15.5.6); an unknown path gets 404, with the `/v1/...` path suggested when the client left
 * the prefix out (a base URL configured without or with a doubled `/v1`), else the public routes listed.
 */
import type { RequestHandler } from 'express';
import { errors } from '../lib/http/errors';

export interface NotFoundOptions {
  /** Known routes as `METHOD /path`, e.g. `POST /v1/messages`; `{param}` matches one path segment. */
  routes: string[];
}

/** A route path as a pattern: `/v1/responses/{id}` matches `/v1/responses/resp_1`. */
function pathPattern(path: string): RegExp {
  const escaped = path.split(/\{\w+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${escaped.join('[^/]+')}$`, 'i');
}

export function createNotFound(options: NotFoundOptions): RequestHandler {
  const byPath = new Map<string, string[]>();
  for (const route of options.routes) {
    const [method, path] = route.split(' ');
    byPath.set(path, [...(byPath.get(path) ?? []), method]);
  }
  const patterns = [...byPath].map(([path, methods]) => ({ path, methods, pattern: pathPattern(path) }));
  /** The methods of the known path matching `path`, with HEAD wherever GET is (Express answers it). */
  const methodsOf = (path: string) => {
    const methods = patterns.find((known) => known.pattern.test(path))?.methods;
    return methods && (methods.includes('GET') ? [...methods, 'HEAD'] : methods);
  };
  // The API's routes named in the hint: /v1/... without a parameter.
  const listed = options.routes.filter((route) => route.includes(' /v1/') && !route.includes('{'));
  return (req, _res, next) => {
    const path = req.path.replace(/\/+$/, '') || '/';
    const allowed = methodsOf(path);
    if (allowed) {
      return next(errors.methodNotAllowed(`${req.method} is not allowed on ${path.slice(0, 200)}; use ${allowed.filter((m) => m !== 'HEAD').join(' or ')}`, allowed));
    }
    const candidates = [`/v1${path}`, path.replace(/^\/v1\/v1\//, '/v1/')];
    const suggestion = candidates.find((candidate) => methodsOf(candidate));
    const hint = suggestion
      ? `; did you mean ${suggestion}? Native clients use the gateway's base URL, chat-completions and Responses clients the base URL plus /v1`
      : `; the API lives under /v1 (${listed.join(', ')})`;
    next(errors.notFound(`no route for ${req.method} ${path.slice(0, 200)}${hint}`));
  };
}
