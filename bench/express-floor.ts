/**
 * Bench child: the least the gateway's fixed design costs. An Express app (request objects born with
 * its prototypes, as the gateway's: lib/http/http-server.ts) with one route, `POST /v1/messages`, that reads
 * the body with express.json (kept as received, as the gateway keeps it), sends those bytes upstream
 * with `http.request` on a keep-alive agent, and relays the reply: a whole reply read and parsed for
 * its usage (which billing needs), a stream piped as it comes. No auth, limits, credit hold,
 * settlement, metrics or log line: the gap between this row and the forwarder's is what Express, the
 * body parser and reading a reply cost before the gateway does any work of its own.
 *
 * Usage: node dist/bench/express-floor.js <upstream-url>
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createHttpServer } from '../lib/http/http-server';
import { serveChild } from './ipc';

function main(): void {
  const target = process.argv[2];
  if (!target) throw new Error('usage: express-floor.js <upstream-url>');
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json({ limit: '10mb', verify: (req, _res, raw) => { (req as unknown as { raw: Buffer }).raw = raw; } }));
  app.post('/v1/messages', (req, res) => {
    const body = (req as unknown as { raw: Buffer }).raw;
    const outgoing = http.request({
      hostname: upstream.hostname, port: upstream.port, method: 'POST', path: '/v1/messages', agent,
      headers: { 'content-type': 'application/json', 'content-length': String(body.length), 'anthropic-version': '2023-06-01' },
    }, (reply) => {
      if (String(reply.headers['content-type']).startsWith('text/event-stream')) {
        res.writeHead(reply.statusCode ?? 502, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        reply.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      reply.on('data', (chunk: Buffer) => chunks.push(chunk));
      reply.on('end', () => {
        const bytes = Buffer.concat(chunks);
        // What billing must read of a whole reply.
        JSON.parse(bytes.toString('utf8'));
        res.writeHead(reply.statusCode ?? 502, { 'content-type': 'application/json', 'content-length': String(bytes.length) });
        res.end(bytes);
      });
    });
    outgoing.on('error', () => (res.headersSent ? res.destroy() : res.status(502).end()));
    outgoing.end(body);
  });
  const server = createHttpServer(app);
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => serveChild((server.address() as AddressInfo).port));
}

main();
