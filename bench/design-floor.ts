/**
 * Bench child: the design floor. The fixed design's framework and nothing of the gateway: an Express
 * app (built like the gateway's, lib/http-server.ts), `express.json()`, and http-proxy on a keep-alive
 * agent that sends the parsed body upstream with the model renamed, reads the whole JSON reply, parses
 * it (as settlement must, for the usage) and sends it on. No auth, limits, credits, logging or metrics.
 *
 * What it shows: the fixed design used plainly, each request handled start to end as its bytes come
 * in. Until phase 8 (bench/RESULTS.md) that was the most the gateway reached. Since then the gateway
 * lets the requests of one event-loop turn go on together (lib/turn.ts): it made 0.88 x to 1.12 x this
 * row's requests/s on the machines of phases 8 to 11, depending on the machine and the run. The row is kept
 * unchanged as the reference the earlier phases were measured against.
 *
 * Usage: node dist/bench/design-floor.js <upstream-url>
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Stream } from 'node:stream';
import express from 'express';
import httpProxy from 'http-proxy';
import { readBody } from '../lib/read-body';
import { serveChild } from './ipc';

/** The body is written by the `proxyReq` handler; http-proxy's pipe of it is a no-op. */
const BODY_WRITTEN_BY_PROXY_REQ = { pipe: (destination: NodeJS.WritableStream) => destination } as unknown as Stream;

function main(): void {
  const target = process.argv[2];
  if (!target) throw new Error('usage: design-floor.js <upstream-url>');
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 });
  const proxy = httpProxy.createProxyServer({ agent, changeOrigin: true, ignorePath: true, xfwd: false, selfHandleResponse: true });
  const bodies = new WeakMap<http.IncomingMessage, Buffer>();
  proxy.on('proxyReq', (proxyReq, req) => {
    proxyReq.removeHeader('x-api-key');
    proxyReq.setHeader('x-api-key', 'bench-upstream-key');
    proxyReq.end(bodies.get(req));
  });
  proxy.on('proxyRes', (proxyRes, _req, res) => {
    void readBody(proxyRes).then((raw) => {
      JSON.parse(raw.toString('utf8'));
      proxyRes.headers['content-length'] = String(raw.length);
      delete proxyRes.headers['transfer-encoding'];
      res.writeHead(proxyRes.statusCode ?? 502, proxyRes.headers);
      res.end(raw);
    }, () => res.destroy());
  });
  proxy.on('error', (_err, _req, res) => {
    if (res instanceof http.ServerResponse && !res.headersSent) res.writeHead(502).end();
    else res.destroy();
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.post('/v1/messages', express.json(), (req, res) => {
    const body = Buffer.from(JSON.stringify({ ...req.body, model: 'bench-upstream-model' }));
    bodies.set(req, body);
    proxy.web(req, res, { target: `${target}/v1/messages`, buffer: BODY_WRITTEN_BY_PROXY_REQ, headers: { 'content-length': String(body.length) } });
  });
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => serveChild((server.address() as AddressInfo).port));
}

main();
