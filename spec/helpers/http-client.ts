/**
 * A bare HTTP client for tests that need what SDKs hide: raw bytes, odd headers, partial reads,
 * aborting mid-stream. Loopback only.
 */
import http from 'node:http';
import { KEYS } from './gateway';

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined. */
  json: any;
}

export interface RawRequest {
  method?: string;
  path: string;
  /** Header list, so one name may repeat. Default: JSON content type. */
  headers?: Array<[string, string]>;
  /** Sent as is (a string or bytes); objects are JSON-encoded. */
  body?: string | Buffer | object;
  agent?: http.Agent;
}

/** Native-route headers with a valid key. */
export function nativeHeaders(key = KEYS.all): Array<[string, string]> {
  return [['content-type', 'application/json'], ['x-api-key', key], ['anthropic-version', '2023-06-01']];
}

/** Chat-route headers with a valid key. */
export function chatHeaders(key = KEYS.all): Array<[string, string]> {
  return [['content-type', 'application/json'], ['authorization', `Bearer ${key}`]];
}

/** Send one request and read the whole reply. */
export function rawRequest(baseUrl: string, request: RawRequest): Promise<RawReply> {
  const url = new URL(request.path, baseUrl);
  const body = request.body === undefined ? undefined
    : typeof request.body === 'string' || Buffer.isBuffer(request.body) ? request.body : JSON.stringify(request.body);
  return new Promise((resolve, reject) => {
    // A repeated name becomes an array value, which Node sends as several header lines.
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of request.headers ?? [['content-type', 'application/json']]) {
      const seen = headers[name];
      headers[name] = seen === undefined ? value : [seen, value].flat();
    }
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const req = http.request({
      hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: request.method ?? 'POST',
      headers, agent: request.agent,
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.once('error', reject);
    });
    req.once('error', reject);
    req.end(body);
  });
}

/** The `data:` payloads of an SSE text, with the event name when present. */
export function parseSseText(text: string): Array<{ event?: string; data: string }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: ?(.*)$/m.exec(block)?.[1];
      const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.replace(/^data: ?/, '')).join('\n');
      return { event, data };
    });
}

/** Assert-friendly check of the native error shape. */
export function isNativeError(body: any): boolean {
  return body?.type === 'error' && typeof body.error?.type === 'string' && typeof body.error?.message === 'string';
}

/** Assert-friendly check of the chat error shape. */
export function isChatError(body: any): boolean {
  const e = body?.error;
  return !!e && typeof e.message === 'string' && typeof e.type === 'string' && 'param' in e && 'code' in e;
}
