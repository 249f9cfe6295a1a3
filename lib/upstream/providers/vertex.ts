/**
 * The Google Vertex AI target provider: the native messages API as Vertex AI serves it.
 *
 * Wire (https://docs.anthropic.com/en/api/claude-on-vertex-ai, and the official client that builds
 * these requests, @anthropic-ai/vertex-sdk `src/client.ts`):
 * - `POST /v1/messages` goes to `/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict`,
 *   `:streamRawPredict` when the body asks for a stream; the model is in the path, not in the body;
 * - `POST /v1/messages/count_tokens` goes to `.../publishers/anthropic/models/count-tokens:rawPredict`, whose
 *   body keeps `model` (the path names no model);
 * - the body carries `anthropic_version: "vertex-2023-10-16"` instead of the `anthropic-version` header
 *   (the header is not sent); `anthropic-beta` stays a header, as the official client sends it;
 * - host `{region}-aiplatform.googleapis.com`, `aiplatform.googleapis.com` for the `global` region;
 * - credentials: a Google OAuth 2 access token (`Authorization: Bearer`) with the cloud-platform scope,
 *   from Application Default Credentials (https://cloud.google.com/docs/authentication/application-default-credentials:
 *   `GOOGLE_APPLICATION_CREDENTIALS`, workload identity, the metadata server), fetched, cached and refreshed
 *   by google-auth-library with its own HTTP client (gaxios, which honours `HTTPS_PROXY` and `NODE_EXTRA_CA_CERTS`).
 * Replies: a whole reply is native JSON, a stream native SSE; an error in Google's shape is rewritten
 * in the native one (cloud-errors.ts, with Google's codes from vertex-errors.ts).
 */
import type http from 'node:http';
import { PassThrough } from 'node:stream';
import { obtainCredentials, type NativeUpstreamRequest, type ProviderRequest, type TargetProvider } from './provider';
import { nativeCloudError } from './cloud-errors';

/** The `anthropic_version` Vertex AI requires in the body (https://docs.anthropic.com/en/api/claude-on-vertex-ai). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';
/** The OAuth 2 scope of Vertex AI's prediction methods (https://cloud.google.com/vertex-ai/docs/reference/rest). */
export const VERTEX_OAUTH_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** An error reply's bytes read to rewrite it (Google's errors are a few hundred bytes); past it, bytes pass unchanged. */
const ERROR_BODY_LIMIT = 64 * 1024;

/** Settings of a Vertex AI target (config `upstream.targets[]` with `provider: "vertex"`). */
export interface VertexSettings {
  /** Google Cloud project ID, e.g. `my-project`. */
  projectId: string;
  /** Vertex AI location, e.g. `us-east5`, `europe-west1`, or `global`. */
  region: string;
  /**
   * A google-auth-library client (anything with `getRequestHeaders()`: `GoogleAuth`, `JWT`,
   * `Impersonated`, ...). Default: `new GoogleAuth({ scopes: VERTEX_OAUTH_SCOPE })`, Application Default Credentials.
   */
  authClient?: unknown;
}

/** What this module uses of a google-auth-library client: v10+ answers a `Headers`, older versions a plain object. */
interface GoogleHeadersSource {
  getRequestHeaders(): Promise<Headers | Record<string, string>>;
}

/**
 * The default endpoint of a Vertex AI region (the official client's defaults).
 * @returns e.g. `https://us-east5-aiplatform.googleapis.com`, `https://aiplatform.googleapis.com` for `global`
 */
export function formatVertexOrigin(region: string): URL {
  return new URL(region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`);
}

/**
 * One path segment (project, region, model ID), percent-encoded so a `/`, `?`, `#` or `:` in a value
 * cannot leave its segment or name another method; `@` (Vertex model versions, `claude-...@20250514`)
 * stays as it is.
 * @throws Error for an empty value, `.` or `..` (a configuration mistake: the path would change level)
 */
function encodeSegment(value: string, what: string): string {
  if (value === '' || value === '.' || value === '..') throw new Error(`Vertex AI ${what} "${value}" cannot be a path segment`);
  return encodeURIComponent(value).replace(/%40/g, '@');
}

function isGoogleHeadersSource(value: unknown): value is GoogleHeadersSource {
  return typeof value === 'object' && value !== null && typeof (value as GoogleHeadersSource).getRequestHeaders === 'function';
}

/** The credential headers of a google-auth-library client (`authorization`, and `x-goog-user-project` when set), lower-case. */
async function readCredentialHeaders(source: GoogleHeadersSource): Promise<Record<string, string>> {
  const headers = await source.getRequestHeaders();
  const entries: Array<[string, string]> = typeof (headers as Headers).forEach === 'function'
    ? [...(headers as Headers).entries()]
    : Object.entries(headers as Record<string, string>);
  const credential: Record<string, string> = {};
  for (const [name, value] of entries) credential[name.toLowerCase()] = value;
  if (!credential.authorization) throw new Error('Google credentials gave no Authorization header');
  return credential;
}

/**
 * The native error reply `response` (a non-200 Vertex AI reply) rewritten by cloud-errors.ts: Google's
 * error shape (or a body that is not JSON) becomes the native one, `content-length` follows; a native
 * body passes unchanged. The body is read to its end
 * (up to ERROR_BODY_LIMIT bytes; past it the bytes pass as they come). `content-length` is removed at
 * once and set to the new length before the first byte is readable.
 */
function adaptErrorReply(response: http.IncomingMessage): http.IncomingMessage {
  const headers: http.IncomingHttpHeaders = { ...response.headers };
  delete headers['content-length'];
  const adapted = Object.assign(new PassThrough(), {
    statusCode: response.statusCode, statusMessage: response.statusMessage, headers, httpVersion: response.httpVersion,
  });
  const chunks: Buffer[] = [];
  let size = 0;
  let passing = false;
  response.on('data', (chunk: Buffer) => {
    if (passing) {
      if (!adapted.write(chunk)) response.pause();
      return;
    }
    chunks.push(chunk);
    size += chunk.length;
    if (size <= ERROR_BODY_LIMIT) return;
    passing = true;
    if (!adapted.write(Buffer.concat(chunks))) response.pause();
  });
  adapted.on('drain', () => response.resume());
  response.on('end', () => {
    if (passing) return void adapted.end();
    const original = Buffer.concat(chunks);
    const text = original.toString('utf8');
    const native = nativeCloudError('vertex', response.statusCode ?? 500, response.headers, text).text;
    // A body already native passes as it came (its bytes, its content type).
    const body = native === text ? original : Buffer.from(native);
    if (body !== original) headers['content-type'] = 'application/json';
    headers['content-length'] = String(body.length);
    adapted.end(body);
  });
  response.on('error', (error) => adapted.destroy(error));
  // A socket lost mid-body: the adapted reply must not end as if whole.
  response.on('close', () => {
    if (!response.complete && !adapted.writableEnded) adapted.destroy(new Error('the Vertex AI error reply was cut before its end'));
  });
  adapted.on('close', () => {
    if (!response.complete) response.destroy();
  });
  return adapted as unknown as http.IncomingMessage;
}

/**
 * A Vertex AI target's provider.
 * @param settings project, region and optionally the google-auth-library client to use
 * @returns the provider; google-auth-library is loaded here (not at the gateway's start) and only when no
 *   `authClient` is given. The first `prepare` finds the credentials; a failure there (no Application Default
 *   Credentials, token endpoint unreachable) rejects that `prepare` with a CloudCredentialError and the next
 *   one tries again. A request it cannot build (another route, a body that is not JSON) rejects with another Error.
 * @throws Error when `projectId` or `region` cannot be a path segment
 */
export function createVertexProvider(settings: VertexSettings): TargetProvider {
  const project = encodeSegment(settings.projectId, 'project ID');
  const location = encodeSegment(settings.region, 'region');
  let google: GoogleHeadersSource;
  if (settings.authClient !== undefined) {
    if (!isGoogleHeadersSource(settings.authClient)) throw new Error('Vertex AI authClient has no getRequestHeaders(): pass a google-auth-library client');
    google = settings.authClient;
  } else {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when a Vertex AI target is configured
    const { GoogleAuth } = require('google-auth-library') as typeof import('google-auth-library');
    google = new GoogleAuth({ scopes: VERTEX_OAUTH_SCOPE });
  }
  const modelsPath = `/v1/projects/${project}/locations/${location}/publishers/anthropic/models`;

  return {
    name: 'vertex',
    async prepare(request: NativeUpstreamRequest, modelId: string): Promise<ProviderRequest> {
      const route = request.path.split('?')[0];
      const countTokens = route === '/v1/messages/count_tokens';
      if (request.method !== 'POST' || (route !== '/v1/messages' && !countTokens)) {
        throw new Error(`Vertex AI serves POST /v1/messages and /v1/messages/count_tokens only, not ${request.method} ${route}`);
      }
      if (!request.body) throw new Error(`Vertex AI needs a JSON body for ${route}`);
      const body = JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
      if (countTokens) body.model = modelId;
      else delete body.model;
      body.anthropic_version = VERTEX_ANTHROPIC_VERSION;
      const method = countTokens ? 'count-tokens:rawPredict' : `${encodeSegment(modelId, 'model ID')}:${request.stream ? 'streamRawPredict' : 'rawPredict'}`;
      const headers: Record<string, string> = { ...request.headers };
      // Vertex AI takes the version from the body; the official client removes the header.
      delete headers['anthropic-version'];
      Object.assign(headers, await obtainCredentials('vertex', () => readCredentialHeaders(google)), { 'content-type': 'application/json' });
      return { method: 'POST', path: `${modelsPath}/${method}`, headers, body: Buffer.from(JSON.stringify(body)) };
    },
    adaptReply(response: http.IncomingMessage): http.IncomingMessage {
      return response.statusCode === 200 ? response : adaptErrorReply(response);
    },
  };
}
