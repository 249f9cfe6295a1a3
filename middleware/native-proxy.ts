/**
 * The direct streaming proxy for native routes (http-proxy). The validated body is re-sent with the
 * model rewritten to the upstream's name; client credentials are dropped and the upstream's injected.
 * Replies pass through byte for byte as they arrive; a side parser reads usage from the passing stream
 * (or from a copy of a JSON body) without holding anything back.
 */
import type { Stream } from 'node:stream';
import type http from 'node:http';
import type { RequestHandler, Request, Response } from 'express';
import httpProxy from 'http-proxy';
import { emptyUsage, getContext, type RequestContext } from '../lib/context';
import { mapUpstreamSocketError } from '../lib/errors';
import { readBody, tryParseJson } from '../lib/read-body';
import { createSseDecoder } from '../lib/sse';
import type { UpstreamClient } from '../lib/upstream';
import { mergeNativeUsage } from '../translators/usage';

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

interface ProxyState {
  /** Headers set on the upstream request after the client's credentials are dropped. */
  headers: Record<string, string>;
  /** The request body sent upstream (the validated body, model renamed). */
  body: Buffer;
  proxyReq?: http.ClientRequest;
  timer?: NodeJS.Timeout;
  timedOut: boolean;
}

/**
 * Pass a native SSE reply to the client as it arrives, reading usage and stop reason on the side.
 * When the upstream names the model differently from the catalogue, the first event (message_start)
 * is rewritten to name the canonical ID; every later byte passes unchanged.
 */
function pipeStream(proxyRes: http.IncomingMessage, res: Response, ctx: RequestContext, rename: ModelRename | null): void {
  const usage = (ctx.usage = emptyUsage());
  const decoder = createSseDecoder((event) => {
    if (event.event !== 'message_start' && event.event !== 'message_delta') return;
    const data = tryParseJson(event.data) as any;
    mergeNativeUsage(usage, event.event === 'message_start' ? data?.message?.usage : data?.usage);
    if (event.event === 'message_delta' && data?.delta?.stop_reason !== undefined) ctx.stopReason = data.delta.stop_reason;
  });
  let head: Buffer | null = rename ? Buffer.alloc(0) : null;
  proxyRes.on('data', (chunk: Buffer) => {
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
    if (head !== null) res.write(head);
    res.end();
  });
}

interface ModelRename {
  from: string;
  to: string;
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
  res.writeHead(200, { ...proxyRes.headers, 'content-length': String(text.length) });
  res.end(text);
}

/**
 * What http-proxy pipes into the upstream request: nothing. The `proxyReq` handler ends that request
 * with the whole body once its headers are final, so head and body leave in one write; a piped stream
 * cost a stream object and a second socket write per request (socket writes were the largest single
 * cost in the benchmark's profile).
 */
const BODY_WRITTEN_BY_PROXY_REQ = { pipe: (destination: NodeJS.WritableStream) => destination } as unknown as Stream;

export function createNativeProxy(options: NativeProxyOptions): RequestHandler {
  const { upstream } = options;
  const states = new WeakMap<Request, ProxyState>();
  const proxy = httpProxy.createProxyServer({
    agent: upstream.agent,
    changeOrigin: true,
    ignorePath: true,
    xfwd: false,
    selfHandleResponse: true,
  });

  proxy.on('proxyReq', (proxyReq, req) => {
    for (const name of DROPPED_REQUEST_HEADERS) proxyReq.removeHeader(name);
    const state = states.get(req as Request);
    if (!state) return;
    for (const [name, value] of Object.entries(state.headers)) proxyReq.setHeader(name, value);
    state.proxyReq = proxyReq;
    proxyReq.end(state.body);
  });

  proxy.on('proxyRes', (proxyRes, req, res) => {
    const state = states.get(req as Request);
    if (state?.timer) clearTimeout(state.timer);
    const ctx = getContext(res as Response);
    ctx.upstreamStatus = proxyRes.statusCode;
    const upstreamRequestId = proxyRes.headers['request-id'];
    for (const name of Object.keys(proxyRes.headers)) {
      if (DROPPED_REPLY_HEADER.test(name)) delete proxyRes.headers[name];
    }
    if (upstreamRequestId) proxyRes.headers['upstream-request-id'] = upstreamRequestId;
    proxyRes.once('data', () => {
      ctx.firstByteMs ??= Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    });
    const model = ctx.model!;
    const rename = model.upstreamModel === model.id ? null : { from: model.upstreamModel, to: model.id };
    const reply = res as Response;
    const stream = String(proxyRes.headers['content-type'] ?? '').startsWith('text/event-stream');
    if (stream) {
      proxyRes.headers['cache-control'] = 'no-cache';
      proxyRes.headers['x-accel-buffering'] = 'no';
      delete proxyRes.headers['content-length'];
    }
    if (proxyRes.statusCode === 200 && !stream) {
      sendJsonReply(proxyRes, reply, ctx, rename).catch(() => reply.destroy());
      return;
    }
    reply.writeHead(proxyRes.statusCode ?? 502, proxyRes.headers);
    if (stream && proxyRes.statusCode === 200) pipeStream(proxyRes, reply, ctx, rename);
    else proxyRes.pipe(reply);
  });

  return (req, res, next) => {
    const ctx = getContext(res);
    const body = Buffer.from(JSON.stringify({ ...req.body, model: ctx.model!.upstreamModel }));
    const version = (req.headers['anthropic-version'] ?? req.headers['vendor-version']) as string;
    const state: ProxyState = {
      timedOut: false,
      body,
      headers: {
        ...upstream.credentialHeaders(),
        'anthropic-version': version,
        'content-length': String(body.length),
        'accept-encoding': 'identity',
      },
    };
    states.set(req, state);
    state.timer = setTimeout(() => {
      state.timedOut = true;
      state.proxyReq?.destroy();
    }, upstream.timeoutMs);
    // A client that goes away mid-reply must not keep the upstream request (and its bill) running.
    res.once('close', () => {
      clearTimeout(state.timer);
      if (!res.writableFinished) state.proxyReq?.destroy();
    });
    const search = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    proxy.web(
      req,
      res,
      {
        target: `${upstream.url.origin}${upstream.url.pathname.replace(/\/+$/, '')}${options.path}${search}`,
        buffer: BODY_WRITTEN_BY_PROXY_REQ,
      },
      (err: NodeJS.ErrnoException) => {
        clearTimeout(state.timer);
        if (res.headersSent) {
          res.destroy();
          return;
        }
        if (res.destroyed) return;
        next(mapUpstreamSocketError(err, state.timedOut));
      },
    );
  };
}
