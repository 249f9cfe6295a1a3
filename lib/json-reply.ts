/** Sending a JSON reply: the one way the gateway's routes (and its simulated upstream) answer with a JSON body. */
import type http from 'node:http';
import { endOfTurn } from './turn';

/**
 * Send `body` as the whole reply: status `status`, `content-type: application/json; charset=utf-8`
 * (what Express's `res.json` sends) and its `content-length`, with the headers already set on `res`
 * (request id, rate-limit headers). A HEAD request gets the headers only (Node leaves the body out).
 *
 * Not `res.status().json()`: Express's `res.json` and `res.send` look up app settings, run the
 * content type through mime-types and content-type to add the charset, and check ETag and freshness
 * on every reply. Measured side by side on the chat route, that cost 10 to 17 µs of CPU per request
 * (286 and 281 -> 269 and 271 µs; bench/RESULTS.md, phase 4).
 * @throws TypeError when `body` cannot be serialised (a cycle, a BigInt), as `JSON.stringify` does
 */
export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body) ?? 'null');
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length) });
  res.end(bytes);
}

/**
 * `sendJson` at the end of the event loop's turn (`endOfTurn`, lib/turn.ts): how the upstream routes
 * send a whole (non-streaming) reply, so that under load the replies whose upstream answers arrived in
 * one turn reach their clients in one burst. Whatever the reply is billed by must be on the request's
 * context before the call: a client that goes away while the reply waits still gets its usage settled.
 * @throws TypeError when `body` cannot be serialised, as `sendJson` does (as a rejection)
 */
export async function sendJsonAtEndOfTurn(res: http.ServerResponse, status: number, body: unknown): Promise<void> {
  await endOfTurn();
  sendJson(res, status, body);
}
