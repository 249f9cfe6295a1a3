/**
 * The upstream client: where requests go, with which credential, over one keep-alive agent, with the
 * reply-head timeout. Both the native proxy and the chat translator send through it.
 */
import http from 'node:http';
import https from 'node:https';
import { mapUpstreamSocketError } from './errors';

export interface UpstreamOptions {
  /** Base URL, e.g. `https://upstream.example` (no trailing slash). */
  url: string;
  /** Upstream credential; undefined sends none (the simulated upstream needs none). */
  apiKey?: string;
  /**
   * How the credential is sent: `x-api-key` (native upstreams, the default) or `bearer`
   * (`Authorization: Bearer`, chat-completions upstreams).
   */
  auth?: 'x-api-key' | 'bearer';
  /** Time allowed for the reply head, in ms. */
  timeoutMs: number;
  /**
   * Max sockets open to the upstream at once. Default: no cap. Every open stream holds one socket for
   * as long as the reply runs (minutes), so a cap makes request cap+1 wait behind streams, not load.
   */
  maxSockets?: number;
}

export interface UpstreamRequest {
  /** Path on the upstream, e.g. `/v1/messages`. */
  path: string;
  /** Extra headers; the credential and content headers are set here. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface UpstreamReply {
  response: http.IncomingMessage;
  /** Destroys the request and its socket (client went away, stream idle). */
  abort(): void;
}

export interface UpstreamClient {
  readonly url: URL;
  readonly agent: http.Agent;
  readonly timeoutMs: number;
  /** Headers that authenticate the gateway upstream (`x-api-key` or bearer), empty when none is configured. */
  credentialHeaders(): Record<string, string>;
  /**
   * POST a request and resolve once the reply head arrives.
   * @throws GatewayError 502 when the upstream cannot be reached, 504 when no head comes in `timeoutMs`.
   */
  send(request: UpstreamRequest): Promise<UpstreamReply>;
  /** True when an HTTP answer (any status) comes back within `timeoutMs` ms. */
  ping(timeoutMs?: number): Promise<boolean>;
}

/** Create the client for one upstream. */
export function createUpstreamClient(options: UpstreamOptions): UpstreamClient {
  const url = new URL(options.url);
  const secure = url.protocol === 'https:';
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? Infinity, maxFreeSockets: 256 };
  const agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const transport = secure ? https : http;
  const basePath = url.pathname.replace(/\/+$/, '');

  function credentialHeaders(): Record<string, string> {
    if (!options.apiKey) return {};
    return options.auth === 'bearer' ? { authorization: `Bearer ${options.apiKey}` } : { 'x-api-key': options.apiKey };
  }

  function send(request: UpstreamRequest): Promise<UpstreamReply> {
    return new Promise((resolve, reject) => {
      let timedOut = false;
      const req = transport.request({
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port || undefined,
        method: 'POST',
        path: basePath + request.path,
        agent,
        headers: {
          ...request.headers,
          ...credentialHeaders(),
          'content-type': 'application/json',
          'content-length': String(request.body.length),
          'accept-encoding': 'identity',
        },
      });
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy();
      }, options.timeoutMs);
      req.once('response', (response) => {
        clearTimeout(timer);
        resolve({ response, abort: () => req.destroy() });
      });
      req.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(mapUpstreamSocketError(err, timedOut));
      });
      req.end(request.body);
    });
  }

  function ping(timeoutMs = 2000): Promise<boolean> {
    return new Promise((resolve) => {
      const req = transport.request({
        protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, method: 'HEAD', path: basePath + '/', agent,
      });
      const timer = setTimeout(() => req.destroy(), timeoutMs);
      req.once('response', (res) => {
        clearTimeout(timer);
        res.resume();
        resolve(true);
      });
      req.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
      req.end();
    });
  }

  return { url, agent, timeoutMs: options.timeoutMs, credentialHeaders, send, ping };
}
