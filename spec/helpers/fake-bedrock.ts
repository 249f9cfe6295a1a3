/**
 * A fake Amazon Bedrock runtime on loopback: InvokeModel, InvokeModelWithResponseStream and CountTokens
 * for Anthropic models, checking what Bedrock checks (a SigV4 signature, recomputed with the AWS SDK's
 * signer and the test's credentials, or a Bedrock API key; the body rules below) and answering in
 * Bedrock's formats (whole JSON with token-count headers; the AWS event stream, encoded with the AWS
 * SDK's codec; errors as `{"message"}` with `x-amzn-errortype`). Shown correct with the official clients
 * in spec/unit/bedrock-provider.spec.ts before the provider is tested against it.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { listenOnLoopback } from '../../lib/http/loopback';
import { readBody, tryParseJson } from '../../lib/http/read-body';
import { writeWithBackpressure } from '../../lib/http/sse';
import { nativeMessage, nativeTextEvents } from './fake-upstream';
import { checkBedrockBody, refuse, type BedrockRefusal } from './fake-bedrock-rules';

export { BEDROCK_BETAS } from './fake-bedrock-rules';

export interface FakeAwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** One request as the fake received it. */
export interface BedrockRecord {
  method: string;
  /** The raw path with its query, as sent (model IDs still encoded). */
  url: string;
  /** The decoded model ID of the path. */
  modelId?: string;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: any;
}

/** What the fake answers to one admitted request (after its checks). */
export type BedrockScript =
  | { kind: 'reply'; text?: string; usage?: { input_tokens: number; output_tokens: number }; omitUsage?: boolean }
  | { kind: 'error'; status: number; errorType: string; message: string }
  /** A whole native message, given as it is (with the token-count headers of its usage). */
  | { kind: 'message'; body: Record<string, any> }
  | { kind: 'events'; events: Array<{ event: string; data: any }>; metrics?: Record<string, number>; omitUsage?: boolean;
    /** After this many events, an exception frame (`:exception-type`) ends the stream. */
    exception?: { after: number; type: string; message: string };
    /** A content_block_delta frame written `times` more times after the first events, each as the socket drains. */
    bulk?: { times: number; sent: { bytes: number } } };

/** Bedrock's answer to a throttled request (InvokeModel "Errors": ThrottlingException, HTTP 429). */
export const THROTTLED: BedrockScript = { kind: 'error', status: 429, errorType: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' };

export interface FakeBedrock {
  url: string;
  records: BedrockRecord[];
  /** The script of the next requests (default: a text reply, streamed when asked). */
  setScript(script: (record: BedrockRecord) => BedrockScript): void;
  /** Forget the requests recorded and go back to the default script. */
  reset(): void;
  close(): Promise<void>;
}

/** What CountTokens answers for an InvokeModel body: a deterministic count from its JSON length. */
export function fakeTokenCount(invokeBody: unknown): number {
  return Math.max(1, Math.ceil(JSON.stringify(invokeBody).length / 4));
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const str = (value: string) => ({ type: 'string' as const, value });

/**
 * One `chunk` event frame: payload `{"bytes": base64(JSON)}` plus Bedrock's padding field `p`
 * (InvokeModelWithResponseStream "Response Syntax": PayloadPart `bytes`, a Blob sent as base64).
 */
export function encodeChunkFrame(event: unknown): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(event)).toString('base64');
  return codec.encode({
    headers: { ':event-type': str('chunk'), ':content-type': str('application/json'), ':message-type': str('event') },
    body: fromUtf8(JSON.stringify({ bytes, p: 'abcdefghij' })),
  });
}

/** An exception frame (`:message-type: exception`, `:exception-type` camel-cased, payload `{"message"}`). */
export function encodeExceptionFrame(type: string, message: string): Uint8Array {
  return codec.encode({
    headers: { ':exception-type': str(type), ':content-type': str('application/json'), ':message-type': str('exception') },
    body: fromUtf8(JSON.stringify({ message })),
  });
}

const BEDROCK_ERROR_NAMESPACE = 'http://internal.amazon.com/coral/com.amazon.bedrock/';

function sendError(res: http.ServerResponse, refusal: BedrockRefusal): void {
  res.writeHead(refusal.status, { 'content-type': 'application/json', 'x-amzn-errortype': `${refusal.errorType}:${BEDROCK_ERROR_NAMESPACE}`, 'x-amzn-requestid': 'fake-request-1' });
  res.end(JSON.stringify({ message: refusal.message }));
}

/** `20260102T030405Z` as a Date. */
function parseAmzDate(text: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : undefined;
}

/**
 * Check a request's credentials as Bedrock does; null when admitted. Wordings and types: AWS "Common
 * Errors" (https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html) and the SigV4
 * reference (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-troubleshooting.html):
 * a missing token 403 MissingAuthenticationTokenException, an unknown key 403 UnrecognizedClientException,
 * a wrong signature 403 InvalidSignatureException, a date more than 5 minutes off "Signature expired".
 * A Bedrock API key is a bearer token (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html).
 */
async function checkCredentials(req: http.IncomingMessage, raw: Buffer, options: FakeBedrockOptions): Promise<BedrockRefusal | null> {
  const auth = req.headers.authorization ?? '';
  if (auth.startsWith('Bearer ')) {
    return options.apiKey !== undefined && auth.slice(7) === options.apiKey ? null : refuse(403, 'UnrecognizedClientException', 'Invalid API Key format: Must start with pre-defined prefix');
  }
  const m = /^AWS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8})\/([^/,]+)\/([^/,]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return refuse(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  const [, keyId, day, region, service, signedList, signature] = m;
  const creds = options.credentials;
  if (keyId !== creds.accessKeyId) return refuse(403, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
  if (service !== 'bedrock') return refuse(403, 'InvalidSignatureException', `Credential should be scoped to correct service: 'bedrock'.`);
  if (region !== options.region) return refuse(403, 'InvalidSignatureException', `Credential should be scoped to a valid region.`);
  const signingDate = parseAmzDate(String(req.headers['x-amz-date'] ?? ''));
  if (!signingDate || !String(req.headers['x-amz-date']).startsWith(day)) return refuse(403, 'InvalidSignatureException', 'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.');
  if (Math.abs(Date.now() - signingDate.getTime()) > 5 * 60_000) return refuse(403, 'InvalidSignatureException', `Signature expired: ${req.headers['x-amz-date']} is now earlier or later than the allowed 5 minutes.`);
  const claimedHash = req.headers['x-amz-content-sha256'];
  if (claimedHash !== undefined && claimedHash !== createHash('sha256').update(raw).digest('hex')) {
    return refuse(400, 'InvalidSignatureException', `The provided 'x-amz-content-sha256' header does not match what was computed.`);
  }
  const names = signedList.split(';');
  if (!names.includes('host')) return refuse(403, 'InvalidSignatureException', `'Host' must be a signed header.`);
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = req.headers[name];
    if (value === undefined) return refuse(403, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.');
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const url = new URL(req.url ?? '/', 'http://fake');
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    query[key] = values.length === 1 ? values[0] : values;
  }
  const rawPath = (req.url ?? '/').split('?')[0];
  const signer = new SignatureV4({ service: 'bedrock', region: options.region, credentials: creds, sha256: Sha256, applyChecksum: names.includes('x-amz-content-sha256') });
  const expected = await signer.sign(new HttpRequest({ method: req.method, protocol: 'http:', hostname: headers.host, path: rawPath, query, headers, body: raw }), { signingDate, signableHeaders: new Set(names) });
  const expectedAuth = String(expected.headers.authorization ?? '');
  if (!expectedAuth.endsWith(`Signature=${signature}`) || !expectedAuth.includes(`SignedHeaders=${signedList},`)) {
    return refuse(403, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.');
  }
  return null;
}

export interface FakeBedrockOptions {
  region: string;
  credentials: FakeAwsCredentials;
  /** A Bedrock API key accepted as a bearer token. */
  apiKey?: string;
  /** Model and inference-profile IDs the account can invoke; CountTokens takes only the base ones. */
  models: string[];
}

const PATH = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|count-tokens)$/;

async function sendStream(res: http.ServerResponse, script: Extract<BedrockScript, { kind: 'events' }>): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-bedrock-content-type': 'application/json', 'x-amzn-requestid': 'fake-request-1' });
  const events = script.events.map((e) => (script.omitUsage && e.data?.usage ? { ...e, data: { ...e.data, usage: undefined } } : e));
  for (let i = 0; i < events.length && !res.destroyed; i++) {
    if (script.exception && i === script.exception.after) {
      res.end(encodeExceptionFrame(script.exception.type, script.exception.message));
      return;
    }
    const last = i === events.length - 1;
    await writeWithBackpressure(res, encodeChunkFrame(last && script.metrics ? { ...events[i].data, 'amazon-bedrock-invocationMetrics': script.metrics } : events[i].data));
    if (i === 2 && script.bulk) {
      const frame = encodeChunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x'.repeat(1000) } });
      for (let n = 0; n < script.bulk.times && !res.destroyed; n++) {
        script.bulk.sent.bytes += frame.length;
        await writeWithBackpressure(res, frame);
      }
    }
  }
  res.end();
}

/** A whole reply with InvokeModel's token-count headers (InvokeModel "Response Syntax"). */
function sendMessage(res: http.ServerResponse, message: unknown, usage: { input_tokens: number; output_tokens: number }): void {
  res.writeHead(200, {
    'content-type': 'application/json', 'x-amzn-requestid': 'fake-request-1', 'x-amzn-bedrock-invocation-latency': '120',
    'x-amzn-bedrock-input-token-count': String(usage.input_tokens), 'x-amzn-bedrock-output-token-count': String(usage.output_tokens),
  });
  res.end(JSON.stringify(message));
}

/** The invocation metrics the default script's streams end with. */
export const DEFAULT_METRICS = { inputTokenCount: 10, outputTokenCount: 5, invocationLatency: 120, firstByteLatency: 40 };

/** The default script: a text reply (streamed when the path asks), metrics on the last chunk. */
function defaultScript(record: BedrockRecord): BedrockScript {
  if (record.url.includes('/invoke-with-response-stream')) {
    return { kind: 'events', events: nativeTextEvents(['Hello', ', world'], undefined, 'claude-bedrock'), metrics: DEFAULT_METRICS };
  }
  return { kind: 'reply' };
}

/** Start the fake on loopback. */
export async function startFakeBedrock(options: FakeBedrockOptions): Promise<FakeBedrock> {
  let script = defaultScript;
  const records: BedrockRecord[] = [];
  const server = http.createServer((req, res) => {
    void readBody(req).then(async (raw) => {
      const body: any = tryParseJson(raw.toString('utf8'));
      const match = PATH.exec((req.url ?? '').split('?')[0]);
      const record: BedrockRecord = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, raw, body, modelId: match ? decodeURIComponent(match[1]) : undefined };
      records.push(record);
      // Credentials first: Bedrock judges nothing of an unauthenticated request.
      const denied = await checkCredentials(req, raw, options);
      if (denied) return sendError(res, denied);
      if (req.method !== 'POST' || !match) return sendError(res, refuse(404, 'UnknownOperationException', 'Unknown operation'));
      const operation = match[2];
      const refusal = checkBedrockBody(operation, record.modelId!, raw, options.models);
      if (refusal) return sendError(res, refusal);
      if (operation === 'count-tokens') {
        const inner = JSON.parse(Buffer.from(body.input.invokeModel.body, 'base64').toString('utf8'));
        res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': 'fake-request-1' });
        return res.end(JSON.stringify({ inputTokens: fakeTokenCount(inner) }));
      }
      const next = script(record);
      if (next.kind === 'error') return sendError(res, refuse(next.status, next.errorType, next.message));
      if (next.kind === 'events') return void sendStream(res, next);
      if (next.kind === 'message') return sendMessage(res, next.body, next.body.usage ?? { input_tokens: 0, output_tokens: 0 });
      const usage = next.usage ?? { input_tokens: 10, output_tokens: 5 };
      const message = nativeMessage(next.text ?? 'Hello, world', usage, 'claude-bedrock');
      if (next.omitUsage) delete message.usage;
      sendMessage(res, message, usage);
    }, () => req.socket.destroy());
  });
  const { url, close } = await listenOnLoopback(server);
  return {
    url, records, close,
    setScript: (next) => (script = next),
    reset: () => {
      records.length = 0;
      script = defaultScript;
    },
  };
}
