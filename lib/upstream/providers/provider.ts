/**
 * The seam between the upstream client and the cloud a target is on. A target's provider turns the
 * native request the routes build (first-party path, headers, JSON body) into its cloud's request
 * (path, body fields, credentials, signature) and its cloud's reply back into the native one. The
 * first-party API (`anthropic`) needs neither step; Bedrock, Vertex AI and Foundry each have a module
 * here that loads its cloud's SDK only when a target of that provider is configured.
 */
import type http from 'node:http';

/** The clouds a target may be on (config `upstream.targets[].provider`). */
export type ProviderName = 'anthropic' | 'bedrock' | 'vertex' | 'foundry';

/** A request as the routes build it for the first-party messages API. */
export interface NativeUpstreamRequest {
  /** `POST`, `GET` or `DELETE`. */
  method: string;
  /** First-party path with its query, e.g. `/v1/messages`, `/v1/messages/count_tokens`. */
  path: string;
  /** Allow-listed request headers, lower-case (`anthropic-version`, `anthropic-beta`, ...); no credential. */
  headers: Record<string, string>;
  /** The native JSON body (its `model` is the catalogue's upstream name); none for GET and DELETE. */
  body?: Buffer;
  /** True when the body asks for a stream (`"stream": true`). */
  stream: boolean;
}

/** The request a provider sends: its path under the target URL, its headers (credentials included) and body. */
export interface ProviderRequest {
  method: string;
  /** Path under the target's URL (its own path prefix is added by the client), with its query. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** One target's provider: built once per target from its config, used for every attempt to it. */
export interface TargetProvider {
  readonly name: ProviderName;
  /**
   * This cloud's request for `request`, sent to the model `modelId` (the target's `modelIds` entry for
   * the catalogue model): path, body fields the cloud wants (e.g. `anthropic_version`), credentials or
   * signature. Asynchronous: credentials may need fetching or refreshing.
   * @throws CloudCredentialError when credentials cannot be obtained (`obtainCredentials` wraps the
   *   credential step: the target's failure, as not started, nothing sent); any other Error when the
   *   request cannot be built for this cloud (the client's 400: cloud-attempt.ts)
   */
  prepare(request: NativeUpstreamRequest, modelId: string, target: { url: URL; basePath: string }): Promise<ProviderRequest>;
  /**
   * The reply as the first-party API gives it. Bedrock's streamed reply is an AWS event stream: it is
   * decoded into the native SSE bytes as they arrive. Others return `response` itself.
   * The returned stream keeps `statusCode` and `headers` (the routes read them) and backpressure.
   */
  adaptReply(response: http.IncomingMessage, request: NativeUpstreamRequest): http.IncomingMessage;
}

/** Longest SDK message kept for the log line of a credential failure, in characters. */
const DETAIL_CHARS = 1000;

/**
 * A cloud target's credentials (the AWS credential chain, google-auth-library, Microsoft Entra ID)
 * could not be obtained. Its own message is fixed; the SDK's error is its `cause`, for the operator's
 * log only: that text may name files, roles, account ids, endpoints or token details, so it never
 * reaches a client (lib/http/errors.ts `errors.cloudCredentials`).
 */
export class CloudCredentialError extends Error {
  override name = 'CloudCredentialError';
  /** How the retry loop tells it from a socket error (lib/upstream/attempt.ts AttemptFailure). */
  readonly code = 'CLOUD_CREDENTIALS';
  /** The target's id (`upstream.targets[].id`), set by its attempt (cloud-attempt.ts); empty before. */
  targetId = '';

  constructor(readonly provider: ProviderName, cause: unknown) {
    super(`${provider} credentials could not be obtained`, { cause });
  }

  /** The SDK's own message, on one line, at most DETAIL_CHARS characters (for the log only). */
  get detail(): string {
    const cause = this.cause as { message?: unknown } | undefined;
    let text: string;
    try {
      text = String(typeof cause?.message === 'string' ? cause.message : cause);
    } catch {
      // A cause String() cannot convert (no prototype): the log says so rather than the error handler failing.
      text = 'an error without a message';
    }
    return text.replace(/\s+/g, ' ').trim().slice(0, DETAIL_CHARS);
  }
}

/**
 * `obtain()`'s answer, a provider's credential step (a token, a header set, an AWS identity).
 * @throws CloudCredentialError whatever `obtain` throws or rejects with, as its `cause`
 */
export async function obtainCredentials<T>(provider: ProviderName, obtain: () => Promise<T>): Promise<T> {
  try {
    return await obtain();
  } catch (err) {
    throw new CloudCredentialError(provider, err);
  }
}
