/**
 * One attempt at a cloud target (a target with a provider: Bedrock, Vertex AI, Foundry): the native
 * request fitted to what the target accepts (providers/request-for-target.ts), turned into the cloud's
 * request by its provider (path, body fields, credentials or signature: asynchronous, as credentials
 * may need fetching), sent, and its reply turned back into the native one. First-party targets never
 * come here: their attempts stay synchronous (client.ts).
 */
import type http from 'node:http';
import { errors, type GatewayError } from '../http/errors';
import type { AttemptFailure } from './attempt';
import { poolStatusOf } from './providers/cloud-errors';
import { CloudCredentialError, type NativeUpstreamRequest } from './providers/provider';
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
 * @throws CloudCredentialError (its `targetId` set) when the target's credentials cannot be had: the
 *   target's failure, nothing sent (client.ts counts it against the target's health and may fail over)
 * @throws GatewayError 400 when the request cannot be built for this target (its fitting, the provider's
 *   conversion or signature, the request head refuse it): the client's request, not the target's
 *   failure, so its health is left alone and nothing is sent anywhere
 */
export async function startCloudAttempt(target: UpstreamTarget, native: NativeUpstreamRequest, modelId: string, contentType?: string): Promise<StartedAttempt> {
  const provider = target.provider!;
  let fitted: NativeUpstreamRequest;
  let dropped: string[];
  let request: http.ClientRequest;
  try {
    ({ request: fitted, dropped } = fitRequestToTarget(native, target.capabilities));
    const prepared = await provider.prepare(fitted, modelId, { url: target.url, basePath: target.basePath });
    const { url } = target;
    const body = prepared.body;
    request = target.transport.request({
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
  } catch (err) {
    if (err instanceof CloudCredentialError) throw Object.assign(err, { targetId: target.id });
    throw refusedRequest(target, err);
  }
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

/** The client's 400 for a request `target` cannot take (`err`: what refused it, on one line, bounded). */
function refusedRequest(target: UpstreamTarget, err: unknown): GatewayError {
  // A stack overflow: only a body nested deeper than the provider's JSON.stringify can cause it.
  const why = err instanceof RangeError && /call stack/i.test(err.message)
    ? 'the request body is nested too deeply'
    : String((err as Error)?.message ?? err).replace(/\s+/g, ' ').trim().slice(0, 300);
  return errors.invalidRequest(`the request cannot be sent to upstream target "${target.id}" (${target.provider!.name}): ${why}`);
}

/**
 * The retry loop's reading of a cloud attempt that could not be started (client.ts): a credential
 * failure is an attempt failure that nothing sent (the target's, counted against its health); a
 * request refused before sending is thrown on as the client's GatewayError.
 */
export function failedToStart(err: unknown): never {
  if (!(err instanceof CloudCredentialError)) throw err;
  throw { error: err, timedOut: false, reusedSocket: false, requestSent: false } satisfies AttemptFailure;
}
