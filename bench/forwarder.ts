/**
 * Bench child: the floor. A bare http-proxy server that forwards every request to the fake upstream
 * over a keep-alive agent and pipes the reply back, with no parsing, auth or logging: what any proxy
 * in front of the upstream costs at least.
 *
 * Usage: node dist/bench/forwarder.js <upstream-url>
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import httpProxy from 'http-proxy';
import { serveChild } from './ipc';

function main(): void {
  const target = process.argv[2];
  if (!target) throw new Error('usage: forwarder.js <upstream-url>');
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 });
  const proxy = httpProxy.createProxyServer({ target, agent });
  proxy.on('error', (_err, _req, res) => {
    if (res instanceof http.ServerResponse && !res.headersSent) res.writeHead(502).end();
    else res.destroy();
  });
  const server = http.createServer((req, res) => proxy.web(req, res));
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => serveChild((server.address() as AddressInfo).port));
}

main();
