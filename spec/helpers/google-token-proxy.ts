/**
 * Google's token endpoint on loopback, reached as a corporate network reaches it: through an HTTPS
 * proxy and with a private CA. google-auth-library's service-account client always posts its JWT to
 * https://oauth2.googleapis.com/token (its gtoken `getToken.js`), whatever the key file's `token_uri`
 * says; its HTTP client (gaxios) honours `HTTPS_PROXY`, and Node trusts `NODE_EXTRA_CA_CERTS`. A
 * gateway process started with the env of `startGoogleTokenProxy` therefore gets its tokens from a
 * fake Vertex AI's token endpoint (fake-vertex.ts) with the library unchanged: the proxy tunnels
 * CONNECT oauth2.googleapis.com:443 (and nothing else: any other CONNECT is refused and recorded) to a
 * TLS server holding a certificate for that name, signed by a throwaway CA, which relays each request
 * to the fake's token endpoint.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { listenOnLoopback } from '../../lib/http/loopback';
import { makeTestCertificates } from './redis-tls';
import { tempDir } from './temp-dir';

/** The host google-auth-library asks for its tokens. */
export const GOOGLE_TOKEN_HOST = 'oauth2.googleapis.com';

export interface GoogleTokenProxy {
  /** `HTTPS_PROXY`, `NO_PROXY` (loopback) and `NODE_EXTRA_CA_CERTS` for the process that fetches tokens. */
  env: Record<string, string>;
  /** CONNECT targets the proxy tunnelled, in order. */
  tunnelled: string[];
  /** CONNECT targets (and plain requests) it refused. */
  refused: string[];
  close(): Promise<void>;
}

/**
 * Start the proxy and the TLS relay to `tokenUri` (a fake Vertex AI's `tokenUri`: its origin gets the
 * request's own path, `/token`).
 * @throws Error when `openssl` is missing (redis-tls.ts makeTestCertificates)
 */
export async function startGoogleTokenProxy(tokenUri: string): Promise<GoogleTokenProxy> {
  const dir = tempDir('google-token-proxy-');
  const { caFile, certFile, keyFile } = await makeTestCertificates(dir, `DNS:${GOOGLE_TOKEN_HOST}`);
  const origin = new URL(tokenUri);
  const relay = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
    const forward = http.request({ hostname: origin.hostname, port: origin.port, method: req.method, path: req.url, headers: { ...req.headers, host: origin.host } }, (reply) => {
      res.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  const relayed = await listenOnLoopback(relay as unknown as http.Server);
  const relayPort = Number(new URL(relayed.url.replace('http:', 'https:')).port);
  const tunnels = new Set<net.Socket>();
  const tunnelled: string[] = [];
  const refused: string[] = [];
  const proxy = http.createServer((req, res) => {
    refused.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  proxy.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    socket.on('error', () => undefined);
    if (req.url !== `${GOOGLE_TOKEN_HOST}:443`) {
      refused.push(`CONNECT ${req.url}`);
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    tunnelled.push(req.url);
    const upstream = net.connect(relayPort, '127.0.0.1', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    for (const end of [socket, upstream]) {
      tunnels.add(end);
      end.once('close', () => {
        tunnels.delete(end);
        (end === socket ? upstream : socket).destroy();
      });
    }
  });
  const proxied = await listenOnLoopback(proxy);
  return {
    env: { HTTPS_PROXY: proxied.url, NO_PROXY: '127.0.0.1,localhost', NODE_EXTRA_CA_CERTS: caFile },
    tunnelled, refused,
    async close() {
      for (const end of tunnels) end.destroy();
      await Promise.all([proxied.close(), relayed.close()]);
      fs.rmSync(path.resolve(dir), { recursive: true, force: true });
    },
  };
}
