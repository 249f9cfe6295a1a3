/**
 * The cloud fields of an upstream target (config `upstream.targets[]`, `keyGroups[].upstream.targets[]`):
 * which cloud serves it (`provider`), the cloud's name of each catalogue model it serves (`modelIds`),
 * where the cloud is (`region`, `projectId`, `url`) and its price difference (`priceMultiplier`).
 * lib/upstream/providers/ holds what each cloud does with them; docs/clouds.md has a config example of each.
 */
import { ConfigError } from './config-error';

/** The clouds a target may be on; `anthropic` (the first-party API) is the default. */
export const PROVIDER_NAMES = ['anthropic', 'bedrock', 'vertex', 'foundry'] as const;
export type TargetProviderName = typeof PROVIDER_NAMES[number];

/** Largest `priceMultiplier` accepted (a typo such as 110 for 1.10 is refused). */
export const MAX_PRICE_MULTIPLIER = 10;

/** JSON schema of the cloud fields of a `targets[]` entry (merged into upstreamTargetSchema). */
export const cloudTargetProperties = {
  provider: { type: 'string', enum: PROVIDER_NAMES },
  modelIds: {
    type: 'object', minProperties: 1, maxProperties: 256,
    additionalProperties: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\s/?#]+$' },
  },
  // AWS regions (us-east-1) and Google Cloud locations (us-east5, europe-west1, global).
  region: { type: 'string', pattern: '^[a-z][a-z0-9-]{1,30}[a-z0-9]$' },
  // Google Cloud project IDs: 6 to 30 lower-case letters, digits and hyphens, starting with a letter.
  projectId: { type: 'string', pattern: '^[a-z][a-z0-9-]{4,28}[a-z0-9]$' },
  priceMultiplier: { type: 'number', exclusiveMinimum: 0, maximum: MAX_PRICE_MULTIPLIER },
} as const;

/** What a target's cloud fields resolve to. */
export interface CloudTargetFields {
  provider: TargetProviderName;
  /** Catalogue ID -> the cloud's model ID (Bedrock model or inference-profile ID, Vertex model name, Foundry deployment). Null for `anthropic`. */
  modelIds: Record<string, string> | null;
  /** AWS region (bedrock) or Google Cloud location (vertex, `global` included). */
  region?: string;
  /** Google Cloud project (vertex). */
  projectId?: string;
  /** Credits of a reply served by this target = its priced usage x this. Default 1. */
  priceMultiplier: number;
  /** The target's origin: its `url`, else the cloud's default endpoint. */
  url: string;
  /** The served catalogue IDs: `models`, else (cloud) the keys of `modelIds`; null: every model of its key group. */
  models: string[] | null;
}

/**
 * The default endpoint origin of a cloud target without `url`.
 * Bedrock: https://docs.aws.amazon.com/general/latest/gr/bedrock.html (bedrock-runtime.{region}.amazonaws.com);
 * Vertex AI: https://cloud.google.com/vertex-ai/docs/general/locations ({region}-aiplatform.googleapis.com,
 * aiplatform.googleapis.com for the `global` location).
 */
export function defaultCloudOrigin(provider: 'bedrock' | 'vertex', region: string): string {
  if (provider === 'bedrock') return `https://bedrock-runtime.${region}.amazonaws.com`;
  return region === 'global' ? 'https://aiplatform.googleapis.com' : `https://${region}-aiplatform.googleapis.com`;
}

/**
 * Resolve and check the cloud fields of one `targets[]` entry (already shape-checked).
 * @param at the entry's path for messages, e.g. `upstream.targets.2`
 * @param catalogue every catalogue ID
 * @throws ConfigError saying how to fix: a cloud field on the wrong provider, a missing region,
 *   projectId or url, `apiKeyEnv` on vertex, a served model without a model ID, an unknown catalogue ID
 */
export function resolveCloudFields(entry: Record<string, any>, at: string, catalogue: ReadonlySet<string>): CloudTargetFields {
  const provider: TargetProviderName = entry.provider ?? 'anthropic';
  const fail = (field: string, how: string) => new ConfigError(`invalid configuration: ${at}.${field}: ${how}`);
  const priceMultiplier: number = entry.priceMultiplier ?? 1;
  if (provider === 'anthropic') {
    for (const field of ['modelIds', 'region', 'projectId']) {
      if (entry[field] !== undefined) throw fail(field, `is for cloud targets ("provider": "bedrock", "vertex" or "foundry"): remove it, or set the target's provider`);
    }
    if (entry.url === undefined) throw fail('url', 'a first-party target needs its "url" (e.g. "https://api.anthropic.com")');
    return { provider, modelIds: null, priceMultiplier, url: trimmed(entry.url), models: entry.models ?? null };
  }
  if (entry.modelIds === undefined) {
    throw fail('modelIds', `a ${provider} target needs "modelIds": {"<catalogue id>": "<the model's ID on ${provider}>"} for each model it serves`);
  }
  const modelIds: Record<string, string> = entry.modelIds;
  for (const id of Object.keys(modelIds)) {
    if (!catalogue.has(id)) throw fail('modelIds', `"${id}" is not a catalogue model id (keys are catalogue ids, values the cloud's model IDs)`);
  }
  const models: string[] = entry.models ?? Object.keys(modelIds);
  for (const model of models) {
    if (modelIds[model] === undefined) throw fail('modelIds', `the target serves "${model}" without a model ID: add "${model}": "<its ID on ${provider}>" to "modelIds", or remove it from "models"`);
  }
  if (provider === 'bedrock') {
    if (entry.region === undefined) throw fail('region', 'a bedrock target needs its AWS "region" (e.g. "us-east-1"), the region its model IDs are enabled in');
    if (entry.projectId !== undefined) throw fail('projectId', 'is for vertex targets: remove it');
    if (Array.isArray(entry.apiKeyEnv) && entry.apiKeyEnv.length > 1) throw fail('apiKeyEnv', 'a bedrock target takes one Bedrock API key (one env variable name), or none for the AWS credential chain');
    return { provider, modelIds, region: entry.region, priceMultiplier, url: trimmed(entry.url ?? defaultCloudOrigin('bedrock', entry.region)), models };
  }
  if (provider === 'vertex') {
    if (entry.projectId === undefined) throw fail('projectId', 'a vertex target needs its Google Cloud "projectId"');
    if (entry.region === undefined) throw fail('region', 'a vertex target needs its "region" (a Google Cloud location such as "us-east5", or "global")');
    if (entry.apiKeyEnv !== undefined) {
      throw fail('apiKeyEnv', 'Vertex AI takes Application Default Credentials, not an API key: remove "apiKeyEnv" and set GOOGLE_APPLICATION_CREDENTIALS (or use workload identity)');
    }
    return { provider, modelIds, region: entry.region, projectId: entry.projectId, priceMultiplier, url: trimmed(entry.url ?? defaultCloudOrigin('vertex', entry.region)), models };
  }
  if (entry.url === undefined) throw fail('url', 'a foundry target needs "url": its resource\'s Anthropic endpoint, e.g. "https://<resource>.services.ai.azure.com/anthropic"');
  for (const field of ['region', 'projectId']) if (entry[field] !== undefined) throw fail(field, `is not used by foundry targets (the resource is in "url"): remove it`);
  if (Array.isArray(entry.apiKeyEnv) && entry.apiKeyEnv.length > 1) throw fail('apiKeyEnv', 'a foundry target takes one API key (one env variable name), or none for Microsoft Entra ID');
  return { provider, modelIds, priceMultiplier, url: trimmed(entry.url), models };
}

/**
 * The largest `priceMultiplier` among `targets` that may serve `modelId` (null `models`: every model):
 * what a request's credit hold is multiplied by, so that whichever target serves it the cap holds.
 * `modelId` null: a request the pool does not route by model (a Message Batch, one upstream call for
 * the requests of all its models), which every one of `targets` may take whatever models it lists.
 * 1 when none is priced apart (or there is no target: the simulated upstream).
 */
export function largestPriceMultiplier(targets: ReadonlyArray<{ models: readonly string[] | null; priceMultiplier: number }>, modelId: string | null): number {
  let largest = 1;
  for (const target of targets) {
    if (target.priceMultiplier > largest && (modelId === null || target.models === null || target.models.includes(modelId))) largest = target.priceMultiplier;
  }
  return largest;
}

const trimmed = (url: string) => String(url).replace(/\/+$/, '');
