/**
 * The upstream client: where requests go, with which credential, over one keep-alive agent, with the
 * reply-head timeout, the retry policy (before the first byte only) and the stream idle watchdog.
 * Both the native proxy and the chat translator send through it; the native proxy, which sends with
 * http-proxy, asks it for credentials and retry decisions so both routes follow one policy.
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import { mapUpstreamSocketError } from './errors';

export interface UpstreamOptions {
  /** Base URL, e.g. `https://upstream.example` (no trailing slash). */
  url: string;
  /** One credential sent as `x-api-key` (same as `apiKeys: [apiKey]`). */
  apiKey?: string;
  /** Credentials used in turn; empty or absent sends none (the simulated upstream needs none). */
  apiKeys?: string[];
  /**
   * How the credential is sent: `x-api-key` (native upstreams, the default) or `bearer`
   * (`Authorization: Bearer`, chat-completions upstreams).
   */
  auth?: 'x-api-key' | 'bearer';
  /** Time allowed for the reply head, per attempt, in ms. */
  timeoutMs: number;
  /** Longest gap between two chunks of a reply body, in ms. Default 120000. */
  streamIdleTimeoutMs?: number;
  /** Retries before the first byte went to the client. Default 2. */
  maxRetries?: number;
  /** First backoff delay in ms, doubled per retry and capped at 8000 ms. Default 500. */
  retryBaseDelayMs?: number;
  /** A longer `retry-after` (ms) is not waited for: the reply goes to the client. Default 20000. */
  maxRetryAfterMs?: number;
  /** How long a credential that got a 401 or 429 is left out of the rotation, in ms. Default 60000. */
  credentialRestMs?: number;
  /**
   * Max sockets open to the upstream at once. Default: no cap. Every open stream holds one socket for
   * as long as the reply runs (minutes), so a cap makes request cap+1 wait behind streams, not load.
   */
  maxSockets?: number;
  /** Clock (epoch ms) and random source in [0, 1), for tests. */
  now?: () => number;
  random?: () => number;
}

/** The fault-handling settings of a client (idle limit, retries, credential rest), as config.json names them. */
export type UpstreamFaultOptions = Pick<UpstreamOptions, 'streamIdleTimeoutMs' | 'maxRetries' | 'retryBaseDelayMs' | 'maxRetryAfterMs' | 'credentialRestMs'>;

/** The fault-handling settings of a resolved `upstream` config section. */
export function faultOptionsOf(upstream: Required<UpstreamFaultOptions>): UpstreamFaultOptions {
  const { streamIdleTimeoutMs, maxRetries, retryBaseDelayMs, maxRetryAfterMs, credentialRestMs } = upstream;
  return { streamIdleTimeoutMs, maxRetries, retryBaseDelayMs, maxRetryAfterMs, credentialRestMs };
}

export interface UpstreamRequest {
  /** Path on the upstream, e.g. `/v1/messages`. */
  path: string;
  /** Extra headers; the credential and content headers are set here. */
  headers: Record<string, string>;
  body: Buffer;
  /** Aborts the attempt under way and any retry wait (the client went away). */
  signal?: CancelSignal;
}

/**
 * What a send listens to for cancellation: the part of `AbortSignal` it uses, so an AbortSignal fits,
 * and so does the gateway's own lighter `ClientGone` (lib/upstream-exchange.ts).
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface UpstreamReply {
  response: http.IncomingMessage;
  /** Destroys the request and its socket (client went away, stream idle). */
  abort(): void;
}

/** One upstream credential as the rotation hands it out. */
export interface UpstreamCredential {
  /** Position in the configured list (never the secret), for logs. */
  readonly index: number;
  /** `{ 'x-api-key': secret }`, or `{}` when no credential is configured. */
  readonly headers: Record<string, string>;
}

/** What one attempt came back with: a reply head, or a socket error. */
export type AttemptOutcome =
  | { status: number; headers: http.IncomingHttpHeaders }
  | { error: NodeJS.ErrnoException; timedOut: boolean; reusedSocket: boolean };

export interface UpstreamClient {
  readonly url: URL;
  readonly agent: http.Agent;
  readonly timeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  readonly maxRetries: number;
  /** Headers of the next credential in turn (`x-api-key` or bearer), empty when none is configured. */
  credentialHeaders(): Record<string, string>;
  /** The next credential in turn, skipping rested ones (when all rest, the one that wakes first). */
  pickCredential(): UpstreamCredential;
  /**
   * Record an attempt's outcome (a 401/429 rests its credential) and decide whether to try again.
   * @param retriesDone retries already made for this request (0 after the first attempt)
   * @returns the delay in ms before the next attempt, or null for no retry
   */
  planRetry(credential: UpstreamCredential, outcome: AttemptOutcome, retriesDone: number): number | null;
  /** `text` with every configured credential replaced by `[redacted]`; `text` itself when it holds none. */
  redact(text: string): string;
  /**
   * POST a request and resolve once a final reply head arrives (retrying as `planRetry` says). The
   * reply body is watched: a gap longer than `streamIdleTimeoutMs` destroys it with an Error whose
   * `code` is `UPSTREAM_IDLE`.
   * @throws GatewayError 502 when the upstream cannot be reached, 504 when no head comes in `timeoutMs`.
   */
  send(request: UpstreamRequest): Promise<UpstreamReply>;
  /** True when an HTTP answer (any status) comes back within `timeoutMs` ms. */
  ping(timeoutMs?: number): Promise<boolean>;
}

/** Statuses retried before the first byte (wire-formats.md §4: rate limit, server error, overload). */
export const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 529]);

/** Backoff cap, as the official SDKs (wire-formats.md §4.2). */
const MAX_BACKOFF_MS = 8000;

/**
 * Delay asked for by a reply's `retry-after-ms` (ms) or `retry-after` (seconds or an HTTP date), in ms.
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(headers: http.IncomingHttpHeaders, now = Date.now()): number | undefined {
  const ms = Number(headers['retry-after-ms']);
  if (headers['retry-after-ms'] !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers['retry-after'];
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Watch a readable for idle gaps: `onIdle` runs once when no chunk arrived for `idleMs`. It listens to
 * 'data', so attach it in the same tick as the stream's reader (or the first chunks go unread).
 * @returns stop(), which also runs by itself when the stream ends or closes
 */
export function watchIdle(stream: Readable, idleMs: number, onIdle: () => void): () => void {
  let timer: NodeJS.Timeout | undefined = setTimeout(fire, idleMs);
  function fire() {
    timer = undefined;
    stop();
    onIdle();
  }
  function reset() {
    if (timer) timer.refresh();
  }
  function stop() {
    if (timer) clearTimeout(timer);
    timer = undefined;
    stream.off('data', reset);
  }
  stream.on('data', reset);
  stream.once('end', stop);
  stream.once('close', stop);
  return stop;
}

/** The error a reply body is destroyed with when it stays idle too long. */
export function createIdleError(idleMs: number): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`the upstream sent nothing for ${idleMs} ms`);
  error.code = 'UPSTREAM_IDLE';
  return error;
}

function sleep(ms: number, signal?: CancelSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Create the client for one upstream. */
export function createUpstreamClient(options: UpstreamOptions): UpstreamClient {
  const url = new URL(options.url);
  const secure = url.protocol === 'https:';
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? Infinity, maxFreeSockets: 256 };
  const agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const transport = secure ? https : http;
  const basePath = url.pathname.replace(/\/+$/, '');
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const streamIdleTimeoutMs = options.streamIdleTimeoutMs ?? 120_000;
  const maxRetries = options.maxRetries ?? 2;
  const retryBaseDelayMs = options.retryBaseDelayMs ?? 500;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 20_000;
  const credentialRestMs = options.credentialRestMs ?? 60_000;

  const secrets = (options.apiKeys ?? (options.apiKey ? [options.apiKey] : [])).filter((key) => key !== '');
  /** Epoch ms until which each credential rests. */
  const restingUntil = secrets.map(() => 0);
  let turn = 0;

  function pickCredential(): UpstreamCredential {
    if (secrets.length === 0) return { index: -1, headers: {} };
    const at = now();
    let chosen = -1;
    for (let step = 0; step < secrets.length; step++) {
      const index = (turn + step) % secrets.length;
      if (restingUntil[index] <= at) {
        chosen = index;
        break;
      }
    }
    if (chosen === -1) chosen = restingUntil.indexOf(Math.min(...restingUntil));
    turn = (chosen + 1) % secrets.length;
    const secret = secrets[chosen];
    return { index: chosen, headers: options.auth === 'bearer' ? { authorization: `Bearer ${secret}` } : { 'x-api-key': secret } };
  }

  function anotherCredentialAwake(index: number): boolean {
    const at = now();
    return restingUntil.some((until, i) => i !== index && until <= at);
  }

  function backoff(retriesDone: number): number {
    const base = Math.min(retryBaseDelayMs * 2 ** retriesDone, MAX_BACKOFF_MS);
    return Math.round(base * (1 - 0.25 * random()));
  }

  function planRetry(credential: UpstreamCredential, outcome: AttemptOutcome, retriesDone: number): number | null {
    if ('status' in outcome) {
      const retryAfter = parseRetryAfter(outcome.headers, now());
      if ((outcome.status === 401 || outcome.status === 429) && credential.index >= 0) {
        restingUntil[credential.index] = now() + Math.max(credentialRestMs, retryAfter ?? 0);
      }
      if (retriesDone >= maxRetries || outcome.headers['x-should-retry'] === 'false') return null;
      // Another credential is not bound by this one's limit or by its rejection: try it at once.
      if ((outcome.status === 401 || outcome.status === 429) && anotherCredentialAwake(credential.index)) return 0;
      if (!RETRYABLE_STATUSES.has(outcome.status)) return null;
      if (retryAfter !== undefined) return retryAfter <= maxRetryAfterMs ? retryAfter : null;
      return backoff(retriesDone);
    }
    if (retriesDone >= maxRetries || outcome.timedOut) return null;
    if (outcome.error.code === 'ECONNREFUSED') return backoff(retriesDone);
    // A kept-alive socket the upstream closed while it sat idle: the request never reached it.
    if (outcome.error.code === 'ECONNRESET' && outcome.reusedSocket) return 0;
    return null;
  }

  function redact(text: string): string {
    let out = text;
    // The same string comes back when no credential is in it (callers compare to tell), with no copy.
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
    return out;
  }

  /** One attempt: resolves with the reply head, rejects with the socket error. */
  function attempt(request: UpstreamRequest, credential: UpstreamCredential): Promise<UpstreamReply> {
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
          ...credential.headers,
          'content-type': 'application/json',
          'content-length': String(request.body.length),
          'accept-encoding': 'identity',
        },
      });
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy();
      }, options.timeoutMs);
      const onAbort = () => req.destroy();
      request.signal?.addEventListener('abort', onAbort, { once: true });
      req.once('response', (response) => {
        clearTimeout(timer);
        // The socket's idle timer, not a 'data' listener: the reply must stay paused until its reader attaches.
        req.setTimeout(streamIdleTimeoutMs, () => {
          response.destroy(createIdleError(streamIdleTimeoutMs));
          req.destroy();
        });
        response.once('close', () => request.signal?.removeEventListener('abort', onAbort));
        resolve({ response, abort: () => req.destroy() });
      });
      req.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        request.signal?.removeEventListener('abort', onAbort);
        reject(Object.assign(err, { timedOut, reusedSocket: req.reusedSocket }));
      });
      req.end(request.body);
    });
  }

  async function send(request: UpstreamRequest): Promise<UpstreamReply> {
    for (let retriesDone = 0; ; retriesDone++) {
      const credential = pickCredential();
      let outcome: AttemptOutcome;
      let reply: UpstreamReply | undefined;
      try {
        reply = await attempt(request, credential);
        outcome = { status: reply.response.statusCode ?? 502, headers: reply.response.headers };
      } catch (err) {
        const error = err as NodeJS.ErrnoException & { timedOut: boolean; reusedSocket: boolean };
        outcome = { error, timedOut: error.timedOut, reusedSocket: error.reusedSocket };
      }
      const delay = request.signal?.aborted ? null : planRetry(credential, outcome, retriesDone);
      if (delay === null) {
        if (reply) return reply;
        const failed = outcome as Extract<AttemptOutcome, { error: unknown }>;
        throw mapUpstreamSocketError(failed.error, failed.timedOut);
      }
      reply?.response.resume();
      try {
        await sleep(delay, request.signal);
      } catch {
        if (reply) return reply;
        throw mapUpstreamSocketError((outcome as { error: NodeJS.ErrnoException }).error, false);
      }
    }
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

  return {
    url,
    agent,
    timeoutMs: options.timeoutMs,
    streamIdleTimeoutMs,
    maxRetries,
    credentialHeaders: () => pickCredential().headers,
    pickCredential,
    planRetry,
    redact,
    send,
    ping,
  };
}
