/**
 * The upstream client: where requests go, with which credential, over one keep-alive agent, and the
 * one retry loop every upstream route goes through (`exchange`): the head timeout of each attempt,
 * the retry policy (before the first byte only), cancellation when the client goes away, and the idle
 * limit of the reply body. Every route sends through `send`, whose request headers pass the allow
 * list of request-headers.ts: nothing a client sent leaves unless the upstream API defines it.
 */
import http from 'node:http';
import https from 'node:https';
import { errors, mapUpstreamSocketError } from '../errors';
import { awaitReplyHead, type AttemptFailure, type AttemptOutcome, type CancelSignal, type UpstreamReply } from './attempt';
import { createCredentialRotation, type UpstreamCredential } from './credentials';
import { isPassedRequestHeader } from './request-headers';
import { createRetryPolicy } from './retry-policy';

/** The defaults of the upstream fault settings (config `upstream.*`, keyGroups[].upstream). */
export const UPSTREAM_DEFAULTS = {
  /** Longest gap between two chunks of a reply body, ms. */
  streamIdleTimeoutMs: 120_000,
  /** Retries before the first byte went to the client. */
  maxRetries: 2,
  /** First backoff delay, ms (doubled per retry, capped at 8000). */
  retryBaseDelayMs: 500,
  /** Longest `retry-after` waited for, ms. */
  maxRetryAfterMs: 20_000,
  /** How long a credential that got a 401 or 429 rests, ms. */
  credentialRestMs: 60_000,
} as const;

export interface UpstreamOptions {
  /** Base URL, e.g. `https://upstream.example` (a path is kept as a prefix). */
  url: string;
  /** One credential (same as `apiKeys: [apiKey]`). */
  apiKey?: string;
  /** Credentials used in turn; empty or absent sends none (the simulated upstream needs none). */
  apiKeys?: string[];
  /** How the credential is sent: `x-api-key` (native upstreams, the default) or `bearer` (chat-completions upstreams). */
  auth?: 'x-api-key' | 'bearer';
  /** Time allowed for the reply head, per attempt, in ms. */
  timeoutMs: number;
  /** See UPSTREAM_DEFAULTS for these five. */
  streamIdleTimeoutMs?: number;
  maxRetries?: number;
  retryBaseDelayMs?: number;
  maxRetryAfterMs?: number;
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

/** The fault-handling settings of a client, as config.json names them. */
export type UpstreamFaultOptions = Pick<UpstreamOptions, keyof typeof UPSTREAM_DEFAULTS>;

/** The fault-handling settings of a resolved `upstream` config section. */
export function faultOptionsOf(upstream: Required<UpstreamFaultOptions>): UpstreamFaultOptions {
  const { streamIdleTimeoutMs, maxRetries, retryBaseDelayMs, maxRetryAfterMs, credentialRestMs } = upstream;
  return { streamIdleTimeoutMs, maxRetries, retryBaseDelayMs, maxRetryAfterMs, credentialRestMs };
}

export interface UpstreamRequest {
  /** Path on the upstream, e.g. `/v1/messages`. */
  path: string;
  /**
   * Extra headers (lower-case names): only those `isPassedRequestHeader` allows are sent (request-headers.ts);
   * the credential and the framing and content headers are set here.
   */
  headers: Record<string, string>;
  body: Buffer;
}

/** Starts one attempt with `credential`: the request it sent. */
export type StartAttempt = (credential: UpstreamCredential) => http.ClientRequest;

export interface UpstreamClient {
  readonly url: URL;
  readonly agent: http.Agent;
  readonly timeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  /** The next credential in turn, skipping rested ones. */
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
   * The retry loop: start attempts until one brings a reply head the policy does not retry. A reply
   * body that stays idle longer than `streamIdleTimeoutMs` is destroyed with an UPSTREAM_IDLE error.
   * @param signal cancels the attempt under way and any retry wait (the client went away)
   * @throws GatewayError 502 when the upstream cannot be reached or an attempt cannot be started (the
   *   message names the cause), 504 when no head comes in `timeoutMs`
   */
  exchange(start: StartAttempt, signal?: CancelSignal): Promise<UpstreamReply>;
  /** POST `request` through `exchange`. */
  send(request: UpstreamRequest, signal?: CancelSignal): Promise<UpstreamReply>;
  /** True when an HTTP answer (any status) comes back within `timeoutMs` ms. */
  ping(timeoutMs?: number): Promise<boolean>;
}

/** Resolves after `ms`; rejects at once when `signal` aborts. */
function sleep(ms: number, signal?: CancelSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
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
  const settings = { ...UPSTREAM_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) };
  const credentials = createCredentialRotation(options.apiKeys ?? (options.apiKey ? [options.apiKey] : []), options.auth ?? 'x-api-key', now);
  const planRetry = createRetryPolicy({ ...settings, now, random: options.random ?? Math.random }, credentials);

  async function exchange(start: StartAttempt, signal?: CancelSignal): Promise<UpstreamReply> {
    for (let retriesDone = 0; ; retriesDone++) {
      const credential = credentials.pick();
      let outcome: AttemptOutcome;
      let reply: UpstreamReply | undefined;
      let request: http.ClientRequest;
      try {
        request = start(credential);
      } catch (err) {
        // Not a socket failure but a request that could not be built: no retry can help.
        throw errors.upstreamUnreachable(`the upstream request could not be sent: ${(err as Error)?.message ?? String(err)}`);
      }
      try {
        reply = await awaitReplyHead(request, options.timeoutMs, settings.streamIdleTimeoutMs, signal);
        outcome = { status: reply.response.statusCode ?? 502, headers: reply.response.headers };
      } catch (failure) {
        outcome = failure as AttemptFailure;
      }
      const delay = signal?.aborted ? null : planRetry(credential, outcome, retriesDone);
      if (delay === null) {
        if (reply) return reply;
        const failed = outcome as AttemptFailure;
        throw mapUpstreamSocketError(failed.error, failed.timedOut);
      }
      reply?.response.resume();
      try {
        await sleep(delay, signal);
      } catch {
        if (reply) return reply;
        throw mapUpstreamSocketError((outcome as AttemptFailure).error, false);
      }
    }
  }

  function send(request: UpstreamRequest, signal?: CancelSignal): Promise<UpstreamReply> {
    const passed: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (isPassedRequestHeader(name)) passed[name] = value;
    return exchange((credential) => {
      const req = transport.request({
        protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, method: 'POST', path: basePath + request.path, agent,
        headers: {
          ...passed, ...credential.headers,
          'content-type': 'application/json', 'content-length': String(request.body.length), 'accept-encoding': 'identity',
        },
      });
      req.end(request.body);
      return req;
    }, signal);
  }

  function ping(timeoutMs = 2000): Promise<boolean> {
    return new Promise((resolve) => {
      const req = transport.request({ protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, method: 'HEAD', path: basePath + '/', agent });
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
    url, agent, timeoutMs: options.timeoutMs, streamIdleTimeoutMs: settings.streamIdleTimeoutMs,
    pickCredential: credentials.pick, planRetry, redact: credentials.redact, exchange, send, ping,
  };
}
