/**
 * The direct streaming proxy for the native routes. The client's body goes upstream as received (or
 * with the model renamed to the upstream's name); of the client's headers only the allow list of
 * lib/upstream/request-headers.ts goes with it (never a credential, a hop-by-hop or framing header, or
 * `expect`), and the upstream's credential is injected. Each attempt goes through the upstream client's one retry loop (head timeout,
 * retries before the first byte, idle limit, cancellation when the client leaves). Replies pass
 * through byte for byte as they arrive; usage and stop reason are read on the side, holding nothing
 * back. A stream that breaks, stalls past the idle limit or ends without `message_stop` is ended with
 * a native `event: error`, never silently.
 */
import type http from 'node:http';
import type { RequestHandler } from 'express';
import { emptyUsage, recordReply, type RequestContext } from '../lib/pipeline/context';
import { errors } from '../lib/http/errors';
import { hasDuplicateKeys } from '../lib/http/json-duplicates';
import { tryParseJson } from '../lib/http/read-body';
import { formatSse } from '../lib/http/sse';
import type { UpstreamClient } from '../lib/upstream';
import { selectUpstreamHeaders } from '../lib/upstream/request-headers';
import { createReplyHandler, isEventStream, modelRenameOf } from './reply';
import { readMessageTail } from '../translators/native-layout';
import { createNativeRelayTransform, type NativeRelayRecord } from '../translators/native-relay-stream';
import type { NativeUsage } from '../translators/native-types';
import { mergeNativeUsage } from '../translators/usage';

export interface NativeProxyOptions {
  upstream: UpstreamClient;
  /** Upstream path, e.g. `/v1/messages`. */
  path: string;
}

/**
 * Reply headers never passed to the client: hop-by-hop headers (Node frames the reply itself), the
 * upstream's own request ids (the gateway's stand), its account limits and identity (they describe
 * the gateway's credential, not the caller's key).
 */
const DROPPED_REPLY_HEADER = /^(connection|keep-alive|proxy-connection|transfer-encoding|te|trailer|upgrade|request-id|x-request-id|anthropic-ratelimit-.*|anthropic-organization-id|set-cookie|x-api-key|authorization|cf-.*|server|via|x-envoy-.*)$/i;

/**
 * The body sent upstream: the client's bytes as received when the model needs no renaming (so every
 * field, block and value the gateway does not read arrives exactly as sent), else the parsed body
 * serialised again with the upstream's model name. Bytes that name a member twice are never sent as
 * received: the upstream might keep the first value where the gateway judged the last (model,
 * max_tokens, tools), so it gets the body as the gateway parsed it.
 * @throws GatewayError 400 when the body is nested too deeply to serialise again
 */
function upstreamBody(body: Record<string, unknown>, ctx: RequestContext): Buffer {
  const upstreamModel = ctx.model!.upstreamModel;
  if (body.model === upstreamModel && ctx.rawBody && !hasDuplicateKeys(ctx.rawBody)) return ctx.rawBody;
  try {
    return Buffer.from(JSON.stringify({ ...body, model: upstreamModel }));
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    throw errors.invalidRequest('request body is nested too deeply');
  }
}

/** The reply head's headers, without those the client must not see; the upstream's request id as `upstream-request-id`. */
function clientHeaders(response: http.IncomingMessage, upstream: UpstreamClient): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined || DROPPED_REPLY_HEADER.test(name)) continue;
    const text = String(value);
    if (upstream.redact(text) === text) headers[name] = value;
  }
  const requestId = response.headers['request-id'];
  if (requestId) headers['upstream-request-id'] = requestId;
  return headers;
}

/** A whole 200 reply as the client gets it: its bytes, with `model` renamed to the canonical ID when the upstream names it differently. */
function wholeReply(bytes: Buffer, ctx: RequestContext): Buffer {
  const rename = modelRenameOf(ctx.model!);
  // Without a rename only the closing members are read (translators/native-layout.ts), when the API laid them out.
  const tail = rename ? undefined : readMessageTail(bytes);
  if (tail) {
    recordReply(ctx, { usage: mergeNativeUsage(emptyUsage(), tail.usage as NativeUsage), stopReason: tail.stopReason as string | null });
    return bytes;
  }
  const body = tryParseJson(bytes.toString('utf8')) as any;
  if (body?.usage) recordReply(ctx, { usage: mergeNativeUsage(emptyUsage(), body.usage) });
  if (body?.stop_reason !== undefined) recordReply(ctx, { stopReason: body.stop_reason });
  return rename && body?.model === rename.from ? Buffer.from(JSON.stringify({ ...body, model: rename.to })) : bytes;
}

export function createNativeProxy(options: NativeProxyOptions): RequestHandler {
  const { upstream } = options;
  return createReplyHandler<NativeRelayRecord, undefined>(upstream, {
    convert(req, _res, ctx) {
      const query = req.originalUrl.indexOf('?');
      const path = options.path + (query === -1 ? '' : req.originalUrl.slice(query));
      return { request: { path, headers: selectUpstreamHeaders(req.headers), body: upstreamBody(req.body, ctx) }, state: undefined };
    },
    // The upstream's own error (status, body, headers), with any upstream credential in it redacted.
    upstreamError: (response, text) => ({ status: response.statusCode ?? 502, headers: clientHeaders(response, upstream), body: text }),
    isStream: isEventStream,
    whole: (bytes, response, ctx) => ({ status: 200, headers: clientHeaders(response, upstream), body: wholeReply(bytes, ctx) }),
    // The head goes out at once with the upstream's headers; bytes pass as they come, usage read on the side.
    stream(response, ctx) {
      const headers = clientHeaders(response, upstream);
      delete headers['content-length'];
      return {
        transform: createNativeRelayTransform(modelRenameOf(ctx.model!)),
        format: (record) => (Buffer.isBuffer(record) ? record : formatSse(record, 'error')),
        headers: { ...headers, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' },
      };
    },
  });
}
