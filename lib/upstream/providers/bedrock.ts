/**
 * The Amazon Bedrock provider: a native request as Bedrock runtime's InvokeModel,
 * InvokeModelWithResponseStream or CountTokens call, signed with SigV4 (or a Bedrock API key), and
 * Bedrock's reply as the first-party API's.
 *
 * Sources:
 * - request body (`anthropic_version: "bedrock-2023-05-31"`, `anthropic_beta` array, no `model`/`stream`):
 *   https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html
 * - paths `/model/{modelId}/invoke`, `/invoke-with-response-stream`, `/count-tokens`:
 *   https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html,
 *   .../API_runtime_InvokeModelWithResponseStream.html, .../API_runtime_CountTokens.html
 * - CountTokens takes a foundation model's ID, not an inference profile's
 *   (https://docs.aws.amazon.com/bedrock/latest/userguide/count-tokens.html);
 * - API keys, sent as `Authorization: Bearer`: https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html
 * - SigV4 (service `bedrock`): https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html
 *
 * The AWS packages (signer, credential chain, event-stream codec) load inside the factory, so a
 * gateway without a Bedrock target never loads them.
 */
import type http from 'node:http';
import { pipeline } from 'node:stream';
import type { Transform } from 'node:stream';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { obtainCredentials, type NativeUpstreamRequest, type ProviderRequest, type TargetProvider } from './provider';
import { convertCountTokensReply, createWholeReplyAdapter, fillUsageFromHeaders } from './bedrock-replies';
import { nativeCloudError, poolStatusOf } from './cloud-errors';
import { createEventStreamToSse } from './bedrock-stream';

/** What a Bedrock target needs. */
export interface BedrockSettings {
  /** The AWS region of the runtime endpoint and of the signature, e.g. `us-east-1`. */
  region: string;
  /** A Bedrock API key, sent as `Authorization: Bearer <key>` instead of a SigV4 signature. */
  apiKey?: string;
  /**
   * AWS credentials; default the SDK's default chain (`defaultProvider()` of
   * @aws-sdk/credential-provider-node: environment keys, shared profile, web identity, container and
   * instance roles), which caches the credentials and refreshes them before they expire. A provider
   * given here is called for every request: give a memoized one.
   */
  credentials?: AwsCredentialIdentityProvider;
}

/** The `anthropic_version` Bedrock requires in the body. */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';
/** The prefixes of cross-region inference profile IDs (`us.anthropic.claude-...`): geography, then the base model ID. */
const INFERENCE_PROFILE_PREFIX = /^(?:us|eu|apac|jp|au|ca|us-gov|global)\.(?=anthropic\.)/;

/**
 * The base model ID CountTokens takes for an inference profile ID (`us.anthropic.x` -> `anthropic.x`);
 * any other ID (a base model ID, an ARN) as given.
 */
export function toCountTokensModelId(modelId: string): string {
  return modelId.replace(INFERENCE_PROFILE_PREFIX, '');
}

/** The model ID as a path segment, encoded as the AWS SDK encodes a label (ARNs hold `:` and `/`). */
export function encodeModelId(modelId: string): string {
  return encodeURIComponent(modelId).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The beta flags of an `anthropic-beta` header (comma-separated), in order, without blanks or repeats. */
function readBetas(header: string | undefined): string[] {
  if (!header) return [];
  return [...new Set(header.split(',').map((beta) => beta.trim()).filter((beta) => beta.length > 0))];
}

/**
 * The Bedrock body of a native one: `model` and `stream` removed, `anthropic_version` set, the betas of
 * the `anthropic-beta` header as `anthropic_beta` (a client's own `anthropic_version` or `anthropic_beta`
 * field is replaced: the first-party API knows neither, so only the gateway's may reach Bedrock).
 * @throws Error when the body is not a JSON object (the routes have checked it: a defect if seen)
 */
export function convertBody(body: Buffer | undefined, betaHeader: string | undefined): Record<string, unknown> {
  const parsed = body === undefined ? undefined : JSON.parse(body.toString('utf8'));
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('a Bedrock request needs a JSON object body');
  const { model: _model, stream: _stream, anthropic_version: _version, anthropic_beta: _betas, ...rest } = parsed;
  const betas = readBetas(betaHeader);
  return { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...(betas.length > 0 ? { anthropic_beta: betas } : {}), ...rest };
}

/** Which Bedrock operation a native request is, or undefined for one Bedrock does not serve. */
function operationOf(request: NativeUpstreamRequest): 'invoke' | 'stream' | 'count' | undefined {
  if (request.method !== 'POST') return undefined;
  const path = request.path.split('?')[0];
  if (path === '/v1/messages') return request.stream ? 'stream' : 'invoke';
  if (path === '/v1/messages/count_tokens') return 'count';
  return undefined;
}

/** The Bedrock path and body of a native request to `modelId`. */
function toBedrockCall(request: NativeUpstreamRequest, modelId: string): { path: string; body: Buffer } {
  const operation = operationOf(request);
  if (operation === undefined) throw new Error(`Bedrock does not serve ${request.method} ${request.path.split('?')[0]}`);
  const body = convertBody(request.body, request.headers['anthropic-beta']);
  if (operation === 'count') {
    // CountTokens counts an InvokeModel body, which requires max_tokens; it does not change the input count.
    const invokeBody = { ...body, max_tokens: body.max_tokens ?? 1 };
    return {
      path: `/model/${encodeModelId(toCountTokensModelId(modelId))}/count-tokens`,
      body: Buffer.from(JSON.stringify({ input: { invokeModel: { body: Buffer.from(JSON.stringify(invokeBody)).toString('base64') } } })),
    };
  }
  const action = operation === 'stream' ? 'invoke-with-response-stream' : 'invoke';
  return { path: `/model/${encodeModelId(modelId)}/${action}`, body: Buffer.from(JSON.stringify(body)) };
}

/** `source` piped into `adapter`, which takes its place as the reply (status, headers, backpressure). */
function replaceBody(source: http.IncomingMessage, adapter: Transform, status: number, headers: http.IncomingHttpHeaders): http.IncomingMessage {
  // pipeline: an error or an early close on either side destroys the other (a client gone stops the upstream read).
  pipeline(source, adapter, () => undefined);
  return Object.assign(adapter, { statusCode: status, statusMessage: source.statusMessage, headers, httpVersion: source.httpVersion }) as unknown as http.IncomingMessage;
}

/** The reply's headers with a new content type, no length (the body changes) and `request-id` from Bedrock's. */
function adaptHeaders(headers: http.IncomingHttpHeaders, contentType: string): http.IncomingHttpHeaders {
  const { 'content-length': _length, ...rest } = headers;
  const requestId = headers['x-amzn-requestid'];
  return { ...rest, 'content-type': contentType, ...(rest['request-id'] === undefined && typeof requestId === 'string' ? { 'request-id': requestId } : {}) };
}

/**
 * The provider of one Bedrock target.
 * @param settings region and credentials ({@link BedrockSettings})
 * @returns a provider whose `prepare` rejects (nothing sent) with a CloudCredentialError when credentials
 *   cannot be obtained, and with another Error for a request it cannot build: a route Bedrock does not
 *   serve (only `POST /v1/messages` and `/v1/messages/count_tokens`), a body that is not a JSON object
 */
export function createBedrockProvider(settings: BedrockSettings): TargetProvider {
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when a Bedrock target is configured */
  const { EventStreamCodec } = require('@smithy/eventstream-codec') as typeof import('@smithy/eventstream-codec');
  const { toUtf8, fromUtf8 } = require('@smithy/util-utf8') as typeof import('@smithy/util-utf8');
  let sign: ((request: ProviderRequest & { host: string; protocol: string }) => Promise<Record<string, string>>) | undefined;
  if (settings.apiKey === undefined) {
    const { SignatureV4 } = require('@smithy/signature-v4') as typeof import('@smithy/signature-v4');
    const { Sha256 } = require('@aws-crypto/sha256-js') as typeof import('@aws-crypto/sha256-js');
    const { HttpRequest } = require('@smithy/protocol-http') as typeof import('@smithy/protocol-http');
    const chain = settings.credentials ?? (require('@aws-sdk/credential-provider-node') as typeof import('@aws-sdk/credential-provider-node')).defaultProvider();
    /* eslint-enable @typescript-eslint/no-require-imports */
    // The chain's failure (and an identity without keys, which the signer would refuse) is a
    // CloudCredentialError: told apart from a request the signer cannot sign.
    const credentials: AwsCredentialIdentityProvider = () => obtainCredentials('bedrock', async () => {
      const identity = await chain();
      if (typeof identity?.accessKeyId !== 'string' || typeof identity.secretAccessKey !== 'string') throw new Error('the AWS credential provider gave no access key');
      return identity;
    });
    const signer = new SignatureV4({ service: 'bedrock', region: settings.region, credentials, sha256: Sha256 });
    sign = async (request) => {
      const [path, query] = request.path.split('?', 2);
      const signed = await signer.sign(new HttpRequest({
        method: request.method, protocol: request.protocol, hostname: request.host, path, headers: request.headers, body: request.body,
        query: query === undefined ? undefined : Object.fromEntries(new URLSearchParams(query)),
      }));
      return signed.headers;
    };
  }

  return {
    name: 'bedrock',
    async prepare(request, modelId, target) {
      const call = toBedrockCall(request, modelId);
      const path = target.basePath + call.path;
      const headers: Record<string, string> = {
        host: target.url.host, 'content-type': 'application/json',
        accept: operationOf(request) === 'stream' ? 'application/vnd.amazon.eventstream' : 'application/json',
      };
      if (sign === undefined) return { method: 'POST', path: call.path, headers: { ...headers, authorization: `Bearer ${settings.apiKey}` }, body: call.body };
      // The signature covers the path as sent: the target's own prefix with it.
      const signed = await sign({ method: 'POST', path, headers, body: call.body, host: target.url.host, protocol: target.url.protocol });
      return { method: 'POST', path: call.path, headers: signed, body: call.body };
    },
    adaptReply(response, request) {
      const status = response.statusCode ?? 502;
      const operation = operationOf(request);
      if (status !== 200) {
        // The exception's status (cloud-attempt.ts counted the same one for the pool).
        const mapped = poolStatusOf('bedrock', status, response.headers);
        const adapter = createWholeReplyAdapter((body) => Buffer.from(nativeCloudError('bedrock', mapped, response.headers, body.toString('utf8')).text));
        return replaceBody(response, adapter, mapped, adaptHeaders(response.headers, 'application/json'));
      }
      if (operation === 'count') return replaceBody(response, createWholeReplyAdapter(convertCountTokensReply), 200, adaptHeaders(response.headers, 'application/json'));
      if (String(response.headers['content-type'] ?? '').startsWith('application/vnd.amazon.eventstream')) {
        return replaceBody(response, createEventStreamToSse(new EventStreamCodec(toUtf8, fromUtf8)), 200, adaptHeaders(response.headers, 'text/event-stream'));
      }
      if (operation === 'invoke' && (response.headers['x-amzn-bedrock-input-token-count'] !== undefined || response.headers['x-amzn-bedrock-output-token-count'] !== undefined)) {
        return replaceBody(response, createWholeReplyAdapter((body) => fillUsageFromHeaders(body, response.headers)), 200, adaptHeaders(response.headers, 'application/json'));
      }
      return response;
    },
  };
}
