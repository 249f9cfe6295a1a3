/**
 * One attempt at a cloud target (a target with a provider: Bedrock, Vertex AI, Foundry): the native
 * request fitted to what the target accepts (providers/request-for-target.ts), turned into the cloud's
 * request by its provider (path, body fields, credentials or signature: asynchronous, as credentials
 * may need fetching), sent, and its reply turned back into the native one. First-party targets never
 * come here: their attempts stay synchronous (client.ts).
 */
import type http from 'node:http';
import { poolStatusOf } from './providers/cloud-errors';
import type { NativeUpstreamRequest } from './providers/provider';
import { fitRequestToTarget } from './providers/request-for-target';
import type { UpstreamTarget } from './target';

/** An attempt whose request could only be built asynchronously (a cloud target's). */
export interface StartedAttempt {
  request: http.ClientRequest;
  /** The reply head as the routes read it: the native reply, its status the one the pool counts. */
  adapt(response: http.IncomingMessage): http.IncomingMessage;
  /** What was removed from the request for this target (beta flags, body fields): `x-gateway-dropped-params`. */
  dropped: readonly string[];
}

/**
 * Start an attempt of `native` at the cloud target `target`, for the catalogue model `modelId` names
 * there (its `modelIds` entry; empty for a request about no model, such as a Files call).
 * @param contentType the body's type when it is not JSON (a multipart upload)
 * @throws Error when the target's credentials cannot be had or the request cannot be built: nothing
 *   was sent (the attempt counts as not started: client.ts may fail over)
 */
export async function startCloudAttempt(target: UpstreamTarget, native: NativeUpstreamRequest, modelId: string, contentType?: string): Promise<StartedAttempt> {
  const provider = target.provider!;
  const { request: fitted, dropped } = fitRequestToTarget(native, target.capabilities);
  const prepared = await provider.prepare(fitted, modelId, { url: target.url, basePath: target.basePath });
  const { url } = target;
  const body = prepared.body;
  const request = target.transport.request({
    protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, method: prepared.method, path: target.basePath + prepared.path, agent: target.agent,
    headers: {
      'accept-encoding': 'identity',
      ...(body ? { 'content-type': contentType ?? 'application/json' } : {}),
      // The provider's own headers win (a signature covers the ones it signed).
      ...prepared.headers,
      ...(body ? { 'content-length': String(body.length) } : {}),
    },
  });
  request.end(body);
  return {
    request,
    dropped,
    adapt(response) {
      const status = response.statusCode ?? 502;
      if (status >= 400) response.statusCode = poolStatusOf(provider.name, status, response.headers);
      return provider.adaptReply(response, fitted);
    },
  };
}
