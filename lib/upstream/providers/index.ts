/**
 * The registry of target providers: a target's config -> its provider, each cloud's module loaded
 * only when a target of that cloud is configured (`require` by name), so a gateway without cloud
 * targets never loads a cloud SDK. The first-party API (`anthropic`) has no provider: the upstream
 * client sends its requests as they are.
 */
import type { ProviderName, TargetProvider } from './provider';

/** What a provider is made from: the target's cloud fields, and its `apiKeyEnv` value read from the env. */
export interface ProviderConfig {
  provider: ProviderName;
  /** AWS region (bedrock) or Google Cloud location (vertex). */
  region?: string;
  /** Google Cloud project (vertex). */
  projectId?: string;
  /** The target's API key, its `apiKeyEnv` read (bedrock: a Bedrock API key sent as a bearer token; foundry: `x-api-key`). */
  apiKey?: string;
}

/** The cloud modules by provider, and the factory each exports. */
const MODULES: Record<Exclude<ProviderName, 'anthropic'>, { path: string; factory: string }> = {
  bedrock: { path: './bedrock', factory: 'createBedrockProvider' },
  vertex: { path: './vertex', factory: 'createVertexProvider' },
  foundry: { path: './foundry', factory: 'createFoundryProvider' },
};

/**
 * The provider of a target: undefined for `anthropic`, else its cloud's module's factory called with
 * `config` (bedrock: region, apiKey; vertex: projectId, region; foundry: apiKey).
 * @throws Error when the cloud's module is not in this build (its message names the provider)
 */
export function createProvider(config: ProviderConfig): TargetProvider | undefined {
  if (config.provider === 'anthropic') return undefined;
  const entry = MODULES[config.provider];
  let loaded: Record<string, unknown>;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require(entry.path) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`upstream provider "${config.provider}" is not available in this build (${(err as Error).message.split('\n')[0]})`);
  }
  const factory = loaded[entry.factory];
  if (typeof factory !== 'function') throw new Error(`upstream provider "${config.provider}": ${entry.path} exports no ${entry.factory}`);
  const settings = { region: config.region, projectId: config.projectId, apiKey: config.apiKey || undefined };
  return (factory as (settings: object) => TargetProvider)(settings);
}
