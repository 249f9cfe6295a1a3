/**
 * What Google Vertex AI refuses of a Claude request, and how it says so, for the fake Vertex AI
 * (fake-vertex.ts). Written from the providers' pages and from replies users have posted, each rule
 * citing its source, independently of the gateway's own provider module, so a wrong rule in the gateway
 * fails a test instead of confirming itself.
 *
 * Two error shapes come back, as from the real service:
 * - what Google's front end refuses (credentials, project, model, quota, a malformed body) is in
 *   Google's error model, https://cloud.google.com/apis/design/errors: `{"error": {"code", "message", "status"}}`;
 * - what the model endpoint refuses (body fields, beta flags, `anthropic_version`) is in the native
 *   shape with a `req_vrtx_` request id, as quoted in the issues cited below.
 */
import type http from 'node:http';

/** Google's OAuth 2 token endpoint, a service account's JWT `aud` (https://developers.google.com/identity/protocols/oauth2/service-account#jwt-auth). */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** The `anthropic_version` Vertex AI accepts: "must be set to the value vertex-2023-10-16" (https://docs.anthropic.com/en/api/claude-on-vertex-ai). */
export const VERTEX_VERSION = 'vertex-2023-10-16';

/**
 * The `anthropic-beta` values Vertex AI accepts. A value off the list is a 400 "Unexpected value(s) ...
 * for the `anthropic-beta` header" (anthropics/claude-code#12429, #34802; BerriAI/litellm#19984).
 * The list: the `vertex_ai` entries LiteLLM keeps from those refusals
 * (https://github.com/BerriAI/litellm/blob/main/litellm/anthropic_beta_headers_config.json), less
 * `context-1m-2025-08-07`, which Vertex refuses as a header (BerriAI/litellm#31607). Refused, among
 * others: `effort-2025-11-24`, `prompt-caching-scope-2026-01-05`, `structured-outputs-2025-11-13`,
 * `fine-grained-tool-streaming-2025-05-14`, `files-api-2025-04-14`, `code-execution-2025-08-25`.
 */
export const VERTEX_BETAS: ReadonlySet<string> = new Set([
  'compact-2026-01-12', 'compact-2026-09-04', 'computer-use-2025-01-24', 'computer-use-2025-11-24',
  'context-management-2025-06-27', 'dangerous-tool-use-2026-09-03', 'interleaved-thinking-2025-05-14',
  'per-turn-control-2026-07-01', 'thinking-binding-controls-2026-08-01', 'thinking-display-updates-2026-08-18',
  'tool-search-tool-2025-10-19', 'web-search-2025-03-05',
]);

/**
 * Body fields Vertex AI refuses with 400 "<field>: Extra inputs are not permitted" (issue 43's list;
 * `output_config`: anthropics/claude-code#52312, OpenHands/software-agent-sdk#1630; `context_management`:
 * anthropics/claude-code#21612, a `req_vrtx_` reply quoted there).
 */
export const VERTEX_REFUSED_FIELDS = ['output_config', 'context_management', 'mcp_servers', 'container', 'service_tier'];

/** A Vertex AI Claude method named by a request path. */
export interface VertexTarget {
  project: string;
  location: string;
  /** The model ID of the path (`count-tokens` for the count-tokens method). */
  model: string;
  method: 'rawPredict' | 'streamRawPredict' | 'count-tokens';
}

/**
 * The method a path names: `/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict`,
 * `:streamRawPredict`, or `.../models/count-tokens:rawPredict` (https://docs.anthropic.com/en/api/claude-on-vertex-ai;
 * https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/count-tokens), segments percent-decoded.
 * @returns undefined for any other path
 */
export function parseVertexPath(url: string): VertexTarget | undefined {
  const match = /^\/v1\/projects\/([^/?#]+)\/locations\/([^/?#]+)\/publishers\/anthropic\/models\/([^/?#:]+):(rawPredict|streamRawPredict)$/.exec(url);
  if (!match) return undefined;
  const [project, location, model] = match.slice(1, 4).map((segment) => decodeURIComponent(segment));
  if (model === 'count-tokens') return match[4] === 'rawPredict' ? { project, location, model, method: 'count-tokens' } : undefined;
  return { project, location, model, method: match[4] as 'rawPredict' | 'streamRawPredict' };
}

/** A Google error body (https://cloud.google.com/apis/design/errors#http_mapping). */
export function googleError(code: number, status: string, message: string): { error: { code: number; message: string; status: string } } {
  return { error: { code, message, status } };
}

/** A native error body as Vertex AI relays the model endpoint's refusals (request id `req_vrtx_...`). */
function nativeError(type: string, message: string): Record<string, unknown> {
  return { type: 'error', error: { type, message }, request_id: `req_vrtx_${Math.random().toString(36).slice(2, 14)}` };
}

/** What a request is judged on. */
export interface VertexJudged {
  method: string;
  target: VertexTarget | undefined;
  headers: http.IncomingHttpHeaders;
  body: any;
  projectId: string;
  models: Record<string, string>;
  /** The bearer token is one the token endpoint issued and it has not expired. */
  authenticated: boolean;
}

/**
 * Vertex AI's refusal of a request, or null when it passes, checked in the order the service does:
 * the method exists, credentials, project, model, body, then the model endpoint's own rules.
 */
export function judgeVertexRequest(request: VertexJudged): { status: number; body: unknown } | null {
  const { target, body } = request;
  if (request.method !== 'POST' || !target) {
    return { status: 404, body: googleError(404, 'NOT_FOUND', 'The requested URL was not found on this server.') };
  }
  // The message Google's APIs give a missing, expired or foreign token (https://cloud.google.com/docs/authentication/troubleshoot-adc).
  if (!request.authenticated) {
    return { status: 401, body: googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.') };
  }
  const resource = `projects/${target.project}/locations/${target.location}/publishers/anthropic/models/${target.model}`;
  // IAM: predict needs aiplatform.endpoints.predict on the project (https://cloud.google.com/vertex-ai/docs/general/access-control).
  if (target.project !== request.projectId) {
    return { status: 403, body: googleError(403, 'PERMISSION_DENIED', `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/${resource}' (or it may not exist).`) };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { status: 400, body: googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.') };
  }
  const counting = target.method === 'count-tokens';
  // Count tokens names its model in the body (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/count-tokens).
  if (counting && typeof body.model !== 'string') return { status: 400, body: nativeError('invalid_request_error', 'model: Field required') };
  const model = counting ? body.model : target.model;
  if (!(model in request.models)) {
    return { status: 404, body: googleError(404, 'NOT_FOUND', `Publisher Model \`projects/${target.project}/locations/${target.location}/publishers/anthropic/models/${model}\` not found.`) };
  }
  // "In Vertex, model is not passed in the request body" (https://docs.anthropic.com/en/api/claude-on-vertex-ai).
  if (!counting && 'model' in body) return { status: 400, body: nativeError('invalid_request_error', 'model: Extra inputs are not permitted') };
  // "anthropic_version is passed in the request body ... must be set to the value vertex-2023-10-16" (same page);
  // a missing one: "anthropic_version: Field required" (jordigilh/kubernaut#686, a req_vrtx_ reply). The
  // official client (@anthropic-ai/vertex-sdk 1.x, client.js: `parsedBody['anthropic_version'] = version`)
  // sends its `anthropic-version` header there, a first-party version (`YYYY-MM-DD` from 2023-06-01): the
  // service it is published for takes it, so the fake does too.
  if (body.anthropic_version === undefined) return { status: 400, body: nativeError('invalid_request_error', 'anthropic_version: Field required') };
  const firstParty = typeof body.anthropic_version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(body.anthropic_version) && body.anthropic_version >= '2023-06-01';
  if (body.anthropic_version !== VERTEX_VERSION && !firstParty) {
    return { status: 400, body: nativeError('invalid_request_error', `anthropic_version: Input should be '${VERTEX_VERSION}'`) };
  }
  const refused = VERTEX_REFUSED_FIELDS.find((field) => field in body);
  if (refused) return { status: 400, body: nativeError('invalid_request_error', `${refused}: Extra inputs are not permitted`) };
  const betas = String(request.headers['anthropic-beta'] ?? '').split(',').map((beta) => beta.trim()).filter(Boolean);
  const unexpected = betas.filter((beta) => !VERTEX_BETAS.has(beta));
  if (unexpected.length > 0) {
    const list = unexpected.map((beta) => `\`${beta}\``).join(', ');
    return { status: 400, body: nativeError('invalid_request_error', `Unexpected value(s) ${list} for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`) };
  }
  return null;
}
