/**
 * Microsoft Foundry: Claude on an Azure resource's Anthropic endpoint
 * (https://platform.claude.com/docs/en/build-with-claude/claude-in-microsoft-foundry). The target's
 * `url` is the resource's `/anthropic` endpoint (`https://<resource>.services.ai.azure.com/anthropic`),
 * under which the first-party paths are served; the body's `model` is the deployment name (the
 * target's `modelIds`). Credentials as the official client (@anthropic-ai/foundry-sdk) sends them: an
 * API key in `x-api-key`, or a Microsoft Entra ID token (`Authorization: Bearer`, scope
 * `https://ai.azure.com/.default`) from @azure/identity's DefaultAzureCredential, loaded only for a
 * Foundry target without an API key.
 */
import type http from 'node:http';
import { obtainCredentials, type NativeUpstreamRequest, type ProviderRequest, type TargetProvider } from './provider';

/** The Entra ID scope the official Foundry client asks tokens for (@anthropic-ai/foundry-sdk README). */
export const FOUNDRY_TOKEN_SCOPE = 'https://ai.azure.com/.default';

export interface FoundrySettings {
  /** The resource's API key (the target's `apiKeyEnv` value). Absent: Microsoft Entra ID. */
  apiKey?: string;
  /** Gets an Entra ID access token; default: DefaultAzureCredential through getBearerTokenProvider. For tests. */
  tokenProvider?: () => Promise<string>;
}

/** The Entra ID token source: @azure/identity, required only here (a heavy library, loaded when configured). */
function createEntraTokenProvider(): () => Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const identity = require('@azure/identity') as typeof import('@azure/identity');
  return identity.getBearerTokenProvider(new identity.DefaultAzureCredential(), FOUNDRY_TOKEN_SCOPE);
}

/**
 * `body` with its `model` replaced by `modelId` (a messages request's JSON); other bodies as they are.
 * @throws SyntaxError when a messages body is not JSON
 */
function withModel(request: NativeUpstreamRequest, modelId: string): Buffer | undefined {
  if (!request.body || !request.path.startsWith('/v1/messages')) return request.body;
  const parsed = JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
  if (parsed.model === modelId) return request.body;
  return Buffer.from(JSON.stringify({ ...parsed, model: modelId }));
}

/**
 * The provider of a Foundry target.
 * @param settings its API key, or none for Microsoft Entra ID (whose token source is made on first use)
 * @returns a provider whose `prepare` rejects with a CloudCredentialError when no Entra ID token can be
 *   had, and with a SyntaxError for a messages body that is not JSON
 */
export function createFoundryProvider(settings: FoundrySettings): TargetProvider {
  let tokens = settings.tokenProvider;
  return {
    name: 'foundry',
    async prepare(request, modelId): Promise<ProviderRequest> {
      let auth: Record<string, string>;
      if (settings.apiKey) {
        auth = { 'x-api-key': settings.apiKey };
      } else {
        const token = await obtainCredentials('foundry', async () => {
          tokens ??= createEntraTokenProvider();
          const issued = await tokens();
          if (typeof issued !== 'string' || issued === '') throw new Error('Microsoft Entra ID gave no token for the Foundry target');
          return issued;
        });
        auth = { authorization: `Bearer ${token}` };
      }
      return { method: request.method, path: request.path, headers: { ...request.headers, ...auth }, body: withModel(request, modelId) };
    },
    adaptReply(response: http.IncomingMessage): http.IncomingMessage {
      // Foundry answers in the first-party format (its errors too).
      return response;
    },
  };
}
