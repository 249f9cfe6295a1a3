/**
 * One upstream call whose whole reply is read, for the objects the upstream keeps for the gateway
 * (Message Batches, Files) and the free count_tokens measure of the credit step: the reply, its JSON,
 * and the target a pinned object lives on.
 *
 * Such an object lives in one upstream account: its pin records the target that created it
 * (`data.target`, the UpstreamReply's `target`), and every later call about it goes to that target
 * only (UpstreamRoute.target), never to another account of the pool, which would answer 404.
 */
import type { Request } from 'express';
import type { PinnedObject } from '../store/types';
import type { CancelSignal } from './attempt';
import type { UpstreamClient } from './index';

/** An upstream reply read whole. */
export interface UpstreamAnswer {
  status: number;
  contentType: string;
  body: Buffer;
  /** Id of the upstream target that answered (lib/upstream/target.ts). */
  target?: string;
}

/** The native headers such a call carries upstream: the version, and the beta flags the client asked for. */
function forwardedHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['anthropic-version', 'anthropic-beta']) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/** The options of one upstream call. */
export interface UpstreamCall {
  /** The JSON body (or `contentType`'s); none for a GET or DELETE. */
  body?: Buffer;
  /** Default `application/json`. */
  contentType?: string;
  /** The only target the call may go to (the pin's `target`); absent: the pool's usual choice. */
  target?: string;
  /** Cancels the call (an AbortSignal); absent: bounded by the upstream timeout only. */
  signal?: CancelSignal;
}

/**
 * Send `method path` upstream and read the reply.
 * @throws GatewayError 502/504 when the upstream cannot be reached or does not answer in time, 502 when
 *   `call.target` is not configured any more
 */
export async function callUpstream(upstream: UpstreamClient, req: Request, method: string, path: string, call: UpstreamCall = {}): Promise<UpstreamAnswer> {
  const { body, contentType, target } = call;
  const reply = await upstream.send({ method, path, headers: forwardedHeaders(req), body, contentType }, call.signal, target === undefined ? undefined : { target });
  const chunks: Buffer[] = [];
  for await (const chunk of reply.response) chunks.push(chunk as Buffer);
  return {
    status: reply.response.statusCode ?? 502, contentType: String(reply.response.headers['content-type'] ?? 'application/json'),
    body: Buffer.concat(chunks), target: reply.target,
  };
}

/** The upstream target a pin's object lives on; undefined for a pin made before targets were recorded. */
export function pinnedTarget(pin: PinnedObject): string | undefined {
  return typeof pin.data.target === 'string' ? pin.data.target : undefined;
}

/** The reply's JSON body, or null. */
export function parseJson(answer: UpstreamAnswer): Record<string, any> | null {
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    return null;
  }
}
