/**
 * The targets of an upstream (config `upstream.targets`, `keyGroups[].upstream.targets`): the several
 * deployments (accounts, regions) one upstream spreads its requests over, each with its own URL,
 * credential, weight and, optionally, the catalogue models it serves. The single `url` / `apiKeyEnv`
 * form is one target. lib/upstream/ routes requests over them (weights, health, session affinity).
 */
import { cloudTargetProperties, resolveCloudFields, type CloudTargetFields } from './cloud-targets';
import { ConfigError } from './config-error';

export { largestPriceMultiplier, PROVIDER_NAMES, type TargetProviderName } from './cloud-targets';

/** One resolved upstream target (its cloud fields: cloud-targets.ts). */
export interface UpstreamTargetConfig extends CloudTargetFields {
  /** Names the target in logs, metrics, /health and the admin API (`[A-Za-z0-9._-]{1,64}`). Single form: `default`. */
  id: string;
  /**
   * Names of the env variables holding this target's credentials: `anthropic`, API keys used in turn
   * (see credentials.ts); `bedrock`, an optional Bedrock API key (else the AWS credential chain);
   * `foundry`, an optional API key (else Microsoft Entra ID); `vertex`, none (Application Default Credentials).
   */
  apiKeyEnvs: string[];
  /** Share of the requests without session affinity: weight / sum of the weights of the targets serving the model. Default 1. */
  weight: number;
  /**
   * True in the `targets` form: each env variable must be set at start-up. The single form keeps its
   * old leniency (an unset variable sends no credential, e.g. to a local upstream that needs none).
   */
  credentialRequired: boolean;
}

/** Most targets of one upstream. */
export const MAX_TARGETS = 16;

/** JSON schema of one `targets[]` entry. */
export const upstreamTargetSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
    url: { type: 'string', pattern: '^https?://' },
    apiKeyEnv: {
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
      ],
    },
    weight: { type: 'integer', minimum: 1, maximum: 1000 },
    models: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
    ...cloudTargetProperties,
  },
} as const;

/** JSON schema of an `upstream.targets` list. */
export const upstreamTargetsSchema = { type: 'array', minItems: 1, maxItems: MAX_TARGETS, items: upstreamTargetSchema } as const;

/**
 * Resolve a `targets` list (already shape-checked).
 * @param raw the list from config.json
 * @param where the field's path for messages, e.g. `upstream.targets`
 * @param defaultApiKeyEnv the env variable of a target that names none
 * @param modelIds every catalogue ID (a target's `models` must name them)
 * @throws ConfigError on a duplicate id or an unknown model
 */
export function resolveUpstreamTargets(raw: Array<Record<string, any>>, where: string, defaultApiKeyEnv: string, modelIds: ReadonlySet<string>): UpstreamTargetConfig[] {
  const targets: UpstreamTargetConfig[] = [];
  raw.forEach((entry, index) => {
    if (targets.some((target) => target.id === entry.id)) throw new ConfigError(`invalid configuration: ${where}.${index}.id: duplicate id "${entry.id}"`);
    for (const model of entry.models ?? []) {
      if (!modelIds.has(model)) throw new ConfigError(`invalid configuration: ${where}.${index}.models: "${model}" is not a catalogue model id`);
    }
    const cloud = resolveCloudFields(entry, `${where}.${index}`, modelIds);
    targets.push({
      id: entry.id,
      ...cloud,
      // A cloud target has its own credential chain: only an `apiKeyEnv` it names is read.
      apiKeyEnvs: cloud.provider === 'anthropic' ? [entry.apiKeyEnv ?? defaultApiKeyEnv].flat() : [entry.apiKeyEnv ?? []].flat(),
      weight: entry.weight ?? 1,
      credentialRequired: true,
    });
  });
  return targets;
}

/** The one target of the single `url` / `apiKeyEnv` form. */
export function singleTarget(url: string, apiKeyEnvs: string[]): UpstreamTargetConfig {
  return { id: 'default', url, apiKeyEnvs, weight: 1, models: null, credentialRequired: false, provider: 'anthropic', modelIds: null, priceMultiplier: 1 };
}

/**
 * The top-level upstream's targets: its `targets` list, or the one target of `url` (or env
 * UPSTREAM_URL) and `apiKeyEnv`; none when neither is set (the simulated upstream). Also returns the
 * first target's URL and credential env variables (`upstream.url`, `upstream.apiKeyEnvs`).
 * @throws ConfigError on a URL that is not http(s), `targets` beside `url` / `apiKeyEnv` / UPSTREAM_URL, or a bad target
 */
export function resolveTopLevelTargets(section: Record<string, any>, env: { UPSTREAM_URL?: string }, modelIds: ReadonlySet<string>): { url: string | null; apiKeyEnvs: string[]; targets: UpstreamTargetConfig[] } {
  if (section.targets) {
    if (section.url !== undefined || section.apiKeyEnv !== undefined) {
      throw new ConfigError('invalid configuration: upstream: give either "targets" or "url" / "apiKeyEnv" (one target), not both');
    }
    if (env.UPSTREAM_URL) {
      throw new ConfigError('invalid configuration: upstream.targets lists the upstream targets, but env UPSTREAM_URL is set too: unset it, or drop "targets"');
    }
    const targets = resolveUpstreamTargets(section.targets, 'upstream.targets', 'UPSTREAM_API_KEY', modelIds);
    return { url: targets[0].url, apiKeyEnvs: targets[0].apiKeyEnvs, targets };
  }
  const url = env.UPSTREAM_URL || section.url || null;
  if (url !== null && !/^https?:\/\//.test(url)) {
    throw new ConfigError(`invalid configuration: upstream.url (or UPSTREAM_URL): "${url}" must start with http:// or https://`);
  }
  const apiKeyEnvs: string[] = [section.apiKeyEnv ?? 'UPSTREAM_API_KEY'].flat();
  const trimmed = url ? url.replace(/\/+$/, '') : null;
  return { url: trimmed, apiKeyEnvs, targets: trimmed ? [singleTarget(trimmed, apiKeyEnvs)] : [] };
}

/**
 * Check that every model of a key group is served by one of its targets.
 * @throws ConfigError naming the first model no target serves, and how to fix it
 */
export function checkTargetsServe(targets: readonly UpstreamTargetConfig[], models: readonly string[], where: string, group: string): void {
  if (targets.length === 0) return;
  for (const model of models) {
    if (!targets.some((target) => target.models === null || target.models.includes(model))) {
      throw new ConfigError(
        `invalid configuration: ${where}: no target serves "${model}" (key group "${group}"): add it to a target's "models", ` +
          'or leave "models" out of a target so it serves every model of the group',
      );
    }
  }
}

/**
 * Check that the env variable of every credential a `targets` list names is set (before the gateway
 * starts: a target without its credential would answer 401 to every request routed to it).
 * @param env the environment the credentials are read from
 * @throws ConfigError naming the target and the variable
 */
export function checkTargetCredentials(targets: readonly UpstreamTargetConfig[], where: string, env: Record<string, string | undefined>): void {
  for (const target of targets) {
    if (!target.credentialRequired) continue;
    for (const name of target.apiKeyEnvs) {
      if (!env[name]) {
        throw new ConfigError(`invalid configuration: ${where}: target "${target.id}" reads its credential from env ${name}, which is not set: set it, or remove the target`);
      }
    }
  }
}
