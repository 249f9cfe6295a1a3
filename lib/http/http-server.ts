/**
 * The HTTP server of an Express app, built so that Express does not change the prototype of every
 * request and response.
 *
 * Express's `app.handle` calls `Object.setPrototypeOf(req, app.request)` and the same for `res` on
 * each request. Changing an object's prototype gives it a new hidden class in V8, so every later
 * property access on `req` and `res` (Express's, Node's HTTP code's, the gateway's) misses V8's inline
 * caches. Here Node's HTTP server creates the request and response objects with those prototypes
 * from the start (its documented `IncomingMessage` / `ServerResponse` options), so Express's call finds
 * the prototype already in place and changes nothing. Behaviour is the same as `http.createServer(app)`.
 * Kept for what it saves: 10 to 20 % of the gateway's CPU per request, at any upstream delay
 * (bench/RESULTS.md, "Mechanisms kept for speed").
 */
import http from 'node:http';
import type { Express } from 'express';

/**
 * Set on a request whose `Expect: 100-continue` the server has not answered: the JSON body step sends
 * the `100 Continue` once the key is checked, so a caller without one never gets to upload its body.
 */
export const CONTINUE_DEFERRED = Symbol('continue deferred');

/** Send the `100 Continue` a request is waiting for, if the server deferred it (see CONTINUE_DEFERRED). */
export function sendDeferredContinue(req: http.IncomingMessage, res: http.ServerResponse): void {
  const deferred = req as http.IncomingMessage & { [CONTINUE_DEFERRED]?: boolean };
  if (!deferred[CONTINUE_DEFERRED]) return;
  deferred[CONTINUE_DEFERRED] = false;
  res.removeHeader('connection');
  res.writeContinue();
}

/**
 * `http.createServer(app)` with request and response objects born with the app's prototypes.
 * @param app an Express app (not a Router: only an app has `request` and `response` prototypes)
 */
export function createHttpServer(app: Express): http.Server {
  // Node's IncomingMessage and ServerResponse are plain constructor functions (callable with `call`),
  // which is what lets a constructor with another prototype run their initialisation.
  function GatewayRequest(this: http.IncomingMessage, socket: unknown): void {
    (http.IncomingMessage as unknown as (this: unknown, socket: unknown) => void).call(this, socket);
  }
  GatewayRequest.prototype = app.request;
  function GatewayResponse(this: http.ServerResponse, req: unknown, options: unknown): void {
    (http.ServerResponse as unknown as (this: unknown, req: unknown, options: unknown) => void).call(this, req, options);
  }
  GatewayResponse.prototype = app.response;
  const server = http.createServer({
    IncomingMessage: GatewayRequest as unknown as typeof http.IncomingMessage,
    ServerResponse: GatewayResponse as unknown as typeof http.ServerResponse,
  }, app);
  // With a 'checkContinue' listener Node does not answer `Expect: 100-continue` itself.
  server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
    (req as http.IncomingMessage & { [CONTINUE_DEFERRED]?: boolean })[CONTINUE_DEFERRED] = true;
    // Refused before its body was asked for: the body never comes, so the connection cannot be reused.
    res.setHeader('connection', 'close');
    app(req as never, res as never);
  });
  return server;
}
