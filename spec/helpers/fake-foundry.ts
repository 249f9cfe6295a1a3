/**
 * A local fake Microsoft Foundry resource (Claude in Foundry): the Anthropic endpoint under
 * `/anthropic`, answering as the fake native upstream does (fake-upstream.ts, the API's own rules
 * included) once it has checked what Foundry checks. Each rule cites its page:
 * - https://platform.claude.com/docs/en/build-with-claude/claude-in-microsoft-foundry: the endpoint is
 *   `https://<resource>.services.ai.azure.com/anthropic/v1/messages`; authentication is an API key in
 *   `x-api-key` or a Microsoft Entra ID token in `Authorization: Bearer` (the official client,
 *   @anthropic-ai/foundry-sdk, `authHeaders`); the model is the deployment's name; no Message Batches
 *   and no Models API (the official client removes both).
 * - https://learn.microsoft.com/en-us/azure/ai-foundry/foundry-models/how-to/use-foundry-models-claude:
 *   a bad credential is a 401 and an unknown deployment a 404 (`DeploymentNotFound`), in Azure's error
 *   shape `{"error":{"code","message"}}`.
 * - Beta flags: Foundry answers a flag it does not offer with the API's 400 ("Unexpected value(s) ...
 *   for the `anthropic-beta` header", https://docs.anthropic.com/en/api/beta-headers).
 */
import { createApiJudge } from './api-rules';
import { defaultHandler, startFakeUpstream, type FakeHandler, type FakeReply, type FakeUpstream, type RecordedRequest } from './fake-upstream';

/** The beta flags the fake Foundry accepts (the Foundry page's feature list). */
export const FOUNDRY_BETAS = new Set([
  'advanced-tool-use-2025-11-20', 'code-execution-2025-05-22', 'code-execution-2025-08-25', 'computer-use-2025-01-24',
  'computer-use-2025-11-24', 'context-1m-2025-08-07', 'context-management-2025-06-27', 'effort-2025-11-24',
  'files-api-2025-04-14', 'interleaved-thinking-2025-05-14', 'mcp-client-2025-04-04', 'mcp-client-2025-11-20',
  'prompt-caching-scope-2026-01-05', 'skills-2025-10-02', 'structured-outputs-2025-11-13', 'web-fetch-2025-09-10',
  'web-search-2025-03-05', 'extended-cache-ttl-2025-04-11',
]);

export interface FakeFoundryOptions {
  /** The resource's API key (`x-api-key`). */
  apiKey?: string;
  /** An Entra ID access token it accepts (`Authorization: Bearer`). */
  token?: string;
  /** Deployment names (the body's `model`). */
  deployments: string[];
  /** What a request that passed every check gets; default: fake-upstream.ts's text reply. */
  handler?: FakeHandler;
}

export interface FakeFoundry extends FakeUpstream {
  /** The resource's Anthropic endpoint: `<origin>/anthropic`. */
  endpoint: string;
  /** Requests that passed every check, their url without `/anthropic`. */
  accepted: RecordedRequest[];
}

const azureError = (status: number, code: string, message: string): FakeReply => ({ kind: 'json', status, body: { error: { code, message } } });
const nativeError = (status: number, type: string, message: string): FakeReply => ({ kind: 'json', status, body: { type: 'error', error: { type, message } } });

/** Start a fake Foundry resource on loopback. */
export async function startFakeFoundry(options: FakeFoundryOptions): Promise<FakeFoundry> {
  const judge = createApiJudge();
  const accepted: RecordedRequest[] = [];
  let handler = options.handler ?? defaultHandler;
  const check: FakeHandler = (request) => {
    if (!request.url.startsWith('/anthropic/')) return azureError(404, 'NotFound', 'Resource not found');
    const key = request.headers['x-api-key'];
    const bearer = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1];
    const authenticated = (key !== undefined && key === options.apiKey) || (bearer !== undefined && bearer === options.token);
    if (!authenticated) return azureError(401, '401', 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.');
    const inner = { ...request, url: request.url.slice('/anthropic'.length) };
    const path = inner.url.split('?')[0];
    if (path.startsWith('/v1/messages/batches') || path.startsWith('/v1/models')) return nativeError(404, 'not_found_error', `Not Found: ${path}`);
    if (request.headers['anthropic-version'] === undefined) return nativeError(400, 'invalid_request_error', 'anthropic-version: header is required');
    const betas = String(request.headers['anthropic-beta'] ?? '').split(',').map((flag) => flag.trim()).filter(Boolean);
    const refused = betas.filter((flag) => !FOUNDRY_BETAS.has(flag));
    if (refused.length > 0) {
      return nativeError(400, 'invalid_request_error', `Unexpected value(s) \`${refused.join('`, `')}\` for the \`anthropic-beta\` header. Please consult our documentation at docs.anthropic.com or try again without the header.`);
    }
    if (request.method === 'POST' && path.startsWith('/v1/messages') && !options.deployments.includes(inner.body?.model)) {
      return azureError(404, 'DeploymentNotFound', 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.');
    }
    const refusal = judge.judge(inner);
    if (refusal) return refusal;
    accepted.push(inner);
    const reply = handler(inner);
    judge.note(reply);
    return reply;
  };
  const fake = await startFakeUpstream(check, { apiRules: false });
  return {
    ...fake,
    endpoint: `${fake.url}/anthropic`,
    accepted,
    setHandler(next) {
      handler = next;
    },
  };
}
