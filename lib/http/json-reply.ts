/** Sending a JSON reply: the one way the gateway's routes (and its simulated upstream) answer with a JSON body. */
import type http from 'node:http';

/**
 * Send `body` as the whole reply: status `status`, `content-type: application/json; charset=utf-8`
 * and its `content-length`, with the headers already set on `res` (request id, rate-limit headers).
 * A HEAD request gets the headers only (Node leaves the body out). Works on a plain
 * `http.ServerResponse` too (the simulated upstream has no Express).
 * @throws TypeError when `body` cannot be serialised (a cycle, a BigInt), as `JSON.stringify` does
 */
export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body) ?? 'null');
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length) });
  res.end(bytes);
}
