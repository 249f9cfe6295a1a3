/**
 * The direct streaming proxy for native routes (http-proxy). The validated body is re-sent with the
 * model rewritten to the upstream's name; client credentials are dropped and the upstream's injected.
 * Replies pass through byte for byte as they arrive; a side parser reads usage from the passing stream
 * (or from a copy of a JSON body) without holding anything back.
 *
 * Faults: a refused connection or a 429/500/502/503/529 before any byte went to the client is tried
 * again as the upstream client's retry policy says; a stream that breaks, stalls past the idle limit
 * or ends without `message_stop` is ended with a native `event: error`, never silently.
 */
import type { Stream } from 'node:stream';
import type http from 'node:http';
import { parse as parseUrl, type Url } from 'node:url';
import type { NextFunction, RequestHandler, Request, Response } from 'express';
import httpProxy from 'http-proxy';
import { emptyUsage, getContext, type RequestContext } from '../lib/context';
import { mapUpstreamSocketError, errors } from '../lib/errors';
import { readBody, tryParseJson } from '../lib/read-body';
import { createSseDecoder, formatSse } from '../lib/sse';
import { watchIdle, type UpstreamClient, type UpstreamCredential } from '../lib/upstream';
import { modelRenameOf, type ModelRename } from '../lib/upstream-exchange';
import { countDeltaCharacters, estimateTokens, mergeNativeUsage } from '../translators/usage';

export interface NativeProxyOptions {
  upstream: UpstreamClient;
  /** Upstream path, e.g. `/v1/messages`. */
  path: string;
}

/** Request headers never forwarded upstream: client credentials, hop-by-hop and forwarding headers. */
const DROPPED_REQUEST_HEADERS = [
  'authorization', 'x-api-key', 'cookie', 'vendor-version', 'forwarded', 'x-forwarded-for', 'x-forwarded-host',
  'x-forwarded-proto', 'x-forwarded-port', 'x-real-ip', 'proxy-authorization', 'te', 'trailer', 'upgrade',
];

/**
 * Reply headers never passed to the client: hop-by-hop headers (Node frames the reply itself), the
 * upstream's own request ids (the gateway's stand), its account limits and identity (they describe
 * the gateway's credential, not the caller's key).
 */
const DROPPED_REPLY_HEADER = /^(connection|keep-alive|proxy-connection|transfer-encoding|te|trailer|upgrade|request-id|x-request-id|anthropic-ratelimit-.*|anthropic-organization-id|set-cookie|x-api-key|authorization|cf-.*|server|via|x-envoy-.*)$/i;

/** Largest upstream error body relayed (they are small JSON objects). */
const ERROR_BODY_LIMIT = 1024 * 1024;

/** Parsed upstream targets kept per native proxy (one per distinct query string). */
const MAX_CACHED_TARGETS = 32;

interface ProxyState {
  next: NextFunction;
  /** The request body sent upstream (the validated body, model renamed); written by the proxyReq handler. */
  body: Buffer;
  proxyReq?: http.ClientRequest;
  credential: UpstreamCredential;
  /** Retries made so far. */
  retriesDone: number;
  /** Reply-head timer of the attempt under way. */
  timer?: NodeJS.Timeout;
  timedOut: boolean;
  /** Backoff wait before the next attempt. */
  retryTimer?: NodeJS.Timeout;
  /** A reply head was accepted (no more retries); socket errors are now the reply handler's. */
  replying: boolean;
  /** Start the next attempt (retries call it again). */
  attempt?: () => void;
}

/**
 * Where a request's proxy state lives, for http-proxy's events to find: on the request itself.
 * Not in a WeakMap keyed by the request: V8's young-generation collector keeps a WeakMap value alive
 * while its key is young, and this state refers back to the request (its `next`, its retry closure),
 * so every request's objects outlived it until the next full collection. The bench saw each
 * scavenge copy and promote about 15 KB per request served, one request at a time as at 32.
 */
const PROXY_STATE = Symbol('native proxy state');

type ProxiedRequest = Request & { [PROXY_STATE]?: ProxyState };

function stateOf(req: http.IncomingMessage): ProxyState | undefined {
  return (req as ProxiedRequest)[PROXY_STATE];
}

/**
 * Pass a native SSE reply to the client as it arrives, reading usage and stop reason on the side.
 * When the upstream names the model differently from the catalogue, the first event (message_start)
 * is rewritten to name the canonical ID; every later byte passes unchanged.
 *
 * `ctx.usage` always holds what was streamed so far: the upstream's figures, and until its final
 * `message_delta` usage arrives, at least an estimate of the output tokens already passed on (so a
 * stream cut short settles what the client received, not the provisional count of message_start).
 */
function pipeStream(proxyRes: http.IncomingMessage, res: Response, ctx: RequestContext, rename: ModelRename | null, idleMs: number, abort: () => void): void {
  const usage = (ctx.usage = emptyUsage());
  let streamedCharacters = 0;
  let finalUsageSeen = false;
  let complete = false;
  const decoder = createSseDecoder((event) => {
    if (event.event === 'message_stop') complete = true;
    if (event.event === 'content_block_delta') {
      streamedCharacters += countDeltaCharacters(tryParseJson(event.data));
    } else if (event.event === 'message_start' || event.event === 'message_delta') {
      const data = tryParseJson(event.data) as any;
      mergeNativeUsage(usage, event.event === 'message_start' ? data?.message?.usage : data?.usage);
      if (event.event === 'message_delta' && typeof data?.usage?.output_tokens === 'number') finalUsageSeen = true;
      if (event.event === 'message_delta' && data?.delta?.stop_reason !== undefined) ctx.stopReason = data.delta.stop_reason;
    }
    if (!finalUsageSeen) usage.output_tokens = Math.max(usage.output_tokens, estimateTokens(streamedCharacters));
  });
  let head: Buffer | null = rename ? Buffer.alloc(0) : null;
  const flushHead = () => {
    if (head !== null && head.length > 0) res.write(head);
    head = null;
  };
  /** End the client's stream with a native error event (wire-formats.md §3: `error` after the 200). */
  const fail = (type: string, message: string) => {
    stopIdle();
    if (res.writableEnded || res.destroyed) return;
    flushHead();
    res.end(formatSse({ type: 'error', error: { type, message } }, 'error'));
  };
  const stopIdle = watchIdle(proxyRes, idleMs, () => {
    abort();
    fail('timeout_error', `the upstream stream was idle for more than ${idleMs} ms`);
  });

  proxyRes.on('data', (chunk: Buffer) => {
    if (res.writableEnded || res.destroyed) return;
    decoder.write(chunk);
    if (head === null) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\n\n');
    if (end === -1 && head.length < 64 * 1024) return;
    const cut = end === -1 ? head.length : end + 2;
    res.write(renameInFirstEvent(head.subarray(0, cut).toString('utf8'), rename!) + head.subarray(cut).toString('latin1'), 'latin1');
    head = null;
  });
  proxyRes.once('end', () => {
    decoder.end();
    if (!complete) return fail('api_error', 'the upstream stream ended before the reply was complete');
    stopIdle();
    flushHead();
    res.end();
  });
  const lost = () => fail('api_error', 'the upstream connection was lost mid-stream');
  proxyRes.once('error', lost);
  proxyRes.once('aborted', lost);
  proxyRes.once('close', () => {
    if (!proxyRes.complete) lost();
  });
}

/** Rewrite `message.model` in a message_start event's data line; any other text is returned as is. */
function renameInFirstEvent(text: string, rename: ModelRename): string {
  return text.replace(/^data: ?(.*)$/m, (line, json: string) => {
    const data = tryParseJson(json) as any;
    if (data?.type !== 'message_start' || data.message?.model !== rename.from) return line;
    data.message.model = rename.to;
    return `data: ${JSON.stringify(data)}`;
  });
}

/** Send a JSON reply, reading its usage and naming the canonical model. */
async function sendJsonReply(proxyRes: http.IncomingMessage, res: Response, ctx: RequestContext, rename: ModelRename | null): Promise<void> {
  const raw = await readBody(proxyRes);
  const body = tryParseJson(raw.toString('utf8')) as any;
  if (body?.usage) ctx.usage = mergeNativeUsage(emptyUsage(), body.usage);
  if (body?.stop_reason !== undefined) ctx.stopReason = body.stop_reason;
  let text = raw;
  if (rename && body?.model === rename.from) {
    body.model = rename.to;
    text = Buffer.from(JSON.stringify(body));
  }
  proxyRes.headers['content-length'] = String(text.length);
  res.writeHead(200, proxyRes.headers);
  res.end(text);
}

/** Relay an upstream error reply (status and body), with any upstream credential in it redacted. */
async function sendErrorReply(proxyRes: http.IncomingMessage, res: Response, upstream: UpstreamClient): Promise<void> {
  const text = Buffer.from(upstream.redact((await readBody(proxyRes, ERROR_BODY_LIMIT)).toString('utf8')));
  proxyRes.headers['content-length'] = String(text.length);
  res.writeHead(proxyRes.statusCode ?? 502, proxyRes.headers);
  res.end(text);
}

/**
 * What http-proxy pipes into the upstream request: nothing. The `proxyReq` handler ends that request
 * with the whole body once its headers are final, so head and body leave in one write; a piped stream
 * cost a stream object and a second socket write per request (socket writes were the largest single
 * cost in the benchmark's profile). Each attempt (retries included) writes the body again.
 */
const BODY_WRITTEN_BY_PROXY_REQ = { pipe: (destination: NodeJS.WritableStream) => destination } as unknown as Stream;

/**
 * The body sent upstream: the client's bytes as received when the model needs no renaming (so every
 * field, block and value the gateway does not read arrives exactly as sent), else the parsed body
 * serialised again with the upstream's model name.
 * @throws GatewayError 400 when the body is nested too deeply to serialise again
 */
function upstreamBody(body: Record<string, unknown>, ctx: RequestContext): Buffer {
  const upstreamModel = ctx.model!.upstreamModel;
  if (body.model === upstreamModel && ctx.rawBody) return ctx.rawBody;
  try {
    return Buffer.from(JSON.stringify({ ...body, model: upstreamModel }));
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    throw errors.invalidRequest('request body is nested too deeply');
  }
}

export function createNativeProxy(options: NativeProxyOptions): RequestHandler {
  const { upstream } = options;
  const proxy = httpProxy.createProxyServer({
    agent: upstream.agent,
    changeOrigin: true,
    ignorePath: true,
    xfwd: false,
    selfHandleResponse: true,
  });

  proxy.on('proxyReq', (proxyReq, req) => {
    // http-proxy copied the client's headers; only those present are removed (a request carries one
    // or two of the list, and each removeHeader call costs a lookup and a delete).
    const received = (req as Request).headers;
    for (const name of DROPPED_REQUEST_HEADERS) if (received[name] !== undefined) proxyReq.removeHeader(name);
    const state = stateOf(req);
    if (!state) return;
    state.proxyReq = proxyReq;
    // Set after the drop list, which names the client's `x-api-key`.
    const credentialHeaders = state.credential.headers;
    for (const name in credentialHeaders) proxyReq.setHeader(name, credentialHeaders[name]);
    proxyReq.end(state.body);
  });

  proxy.on('proxyRes', (proxyRes, req, res) => {
    const state = stateOf(req)!;
    clearTimeout(state.timer);
    const reply = res as Response;
    const status = proxyRes.statusCode ?? 502;
    if (status !== 200 && !reply.headersSent && !reply.destroyed) {
      const delay = upstream.planRetry(state.credential, { status, headers: proxyRes.headers }, state.retriesDone);
      if (delay !== null) {
        proxyRes.resume();
        state.retriesDone += 1;
        state.retryTimer = setTimeout(() => state.attempt?.(), delay);
        return;
      }
    }
    state.replying = true;
    const ctx = getContext(reply);
    ctx.upstreamStatus = status;
    const upstreamRequestId = proxyRes.headers['request-id'];
    for (const name in proxyRes.headers) {
      const value = proxyRes.headers[name];
      const text = typeof value === 'string' ? value : String(value);
      if (DROPPED_REPLY_HEADER.test(name) || upstream.redact(text) !== text) delete proxyRes.headers[name];
    }
    if (upstreamRequestId) proxyRes.headers['upstream-request-id'] = upstreamRequestId;
    proxyRes.once('data', () => {
      ctx.firstByteMs ??= Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    });
    const model = ctx.model!;
    const rename = modelRenameOf(model);
    const stream = String(proxyRes.headers['content-type'] ?? '').startsWith('text/event-stream');
    if (stream) {
      proxyRes.headers['cache-control'] = 'no-cache';
      proxyRes.headers['x-accel-buffering'] = 'no';
      delete proxyRes.headers['content-length'];
    }
    if (stream && status === 200) {
      reply.writeHead(200, proxyRes.headers);
      pipeStream(proxyRes, reply, ctx, rename, upstream.streamIdleTimeoutMs, () => state.proxyReq?.destroy());
      return;
    }
    // A buffered reply (JSON or error) whose body stalls or breaks before any byte went out is a 504/502.
    watchIdle(proxyRes, upstream.streamIdleTimeoutMs, () => {
      state.timedOut = true;
      state.proxyReq?.destroy();
    });
    const send = status === 200 ? sendJsonReply(proxyRes, reply, ctx, rename) : sendErrorReply(proxyRes, reply, upstream);
    send.catch(() => {
      if (reply.headersSent || reply.destroyed) return reply.destroy();
      state.next(state.timedOut ? errors.upstreamTimeout('the upstream reply stalled') : errors.upstreamUnreachable('the upstream reply broke off'));
    });
  });

  // http-proxy parses a string target with `url.parse` on every request; it is given the parsed form,
  // kept per query string (a few at most: SDKs send none or `?beta=true`).
  const targets = new Map<string, Url>();
  let targetsOf: URL | null = null;
  const targetFor = (search: string): Url => {
    if (targetsOf !== upstream.url) {
      targets.clear();
      targetsOf = upstream.url;
    }
    let target = targets.get(search);
    if (!target) {
      target = parseUrl(`${upstream.url.origin}${upstream.url.pathname.replace(/\/+$/, '')}${options.path}${search}`);
      if (targets.size < MAX_CACHED_TARGETS) targets.set(search, target);
    }
    return target;
  };

  return function nativeProxy(req, res, next) {
    const ctx = getContext(res);
    let body: Buffer;
    try {
      body = upstreamBody(req.body, ctx);
    } catch (err) {
      return next(err);
    }
    const version = (req.headers['anthropic-version'] ?? req.headers['vendor-version']) as string;
    const state: ProxyState = { next, body, credential: upstream.pickCredential(), retriesDone: 0, timedOut: false, replying: false };
    (req as ProxiedRequest)[PROXY_STATE] = state;
    // A client that goes away mid-reply must not keep the upstream request (and its bill) running.
    res.once('close', () => {
      clearTimeout(state.timer);
      clearTimeout(state.retryTimer);
      if (!res.writableFinished) state.proxyReq?.destroy();
    });
    const query = req.originalUrl.indexOf('?');
    const target = targetFor(query === -1 ? '' : req.originalUrl.slice(query));

    const attempt = () => {
      if (res.destroyed) return;
      if (state.retriesDone > 0) state.credential = upstream.pickCredential();
      state.timedOut = false;
      state.proxyReq = undefined;
      state.timer = setTimeout(() => {
        state.timedOut = true;
        state.proxyReq?.destroy();
      }, upstream.timeoutMs);
      proxy.web(
        req,
        res,
        {
          target,
          buffer: BODY_WRITTEN_BY_PROXY_REQ,
          headers: {
            'anthropic-version': version,
            'content-length': String(body.length),
            'accept-encoding': 'identity',
          },
        },
        (err: NodeJS.ErrnoException) => {
          clearTimeout(state.timer);
          // After the head went out, the stream handler ends the reply with an error event.
          if (state.replying || res.headersSent || res.destroyed) return;
          const outcome = { error: err, timedOut: state.timedOut, reusedSocket: state.proxyReq?.reusedSocket ?? false };
          const delay = upstream.planRetry(state.credential, outcome, state.retriesDone);
          if (delay !== null) {
            state.retriesDone += 1;
            state.retryTimer = setTimeout(attempt, delay);
            return;
          }
          next(mapUpstreamSocketError(err, state.timedOut));
        },
      );
    };
    state.attempt = attempt;
    attempt();
  };
}
