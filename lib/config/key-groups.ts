/**
 * Key groups (spec, Authentication rule 8): each group is a key prefix, its own catalogue of model IDs
 * and its own upstream of a given kind. The basic group `default` is the `sk-cs4-` native catalogue;
 * a second group may point at an upstream that speaks chat-completions itself (another model family).
 *
 * `keyGroups` in config.json lists the groups besides the basic one (the basic one may be listed too,
 * to narrow its models). Every catalogue model belongs to exactly one group: the models no group
 * claims belong to `default`.
 */
import { ConfigError } from './config-error';
import { checkTargetsServe, largestPriceMultiplier, resolveUpstreamTargets, singleTarget, upstreamTargetsSchema, type UpstreamTargetConfig } from './upstream-targets';

/** What an upstream speaks: the native messages format or chat-completions. */
export type UpstreamKind = 'native' | 'chat-completions';

/** The id of the basic key group. */
export const DEFAULT_KEY_GROUP = 'default';
/** The key prefix of the basic key group (spec, Authentication rule 1). */
export const DEFAULT_KEY_PREFIX = 'sk-cs4-';

export interface KeyGroupUpstream {
  kind: UpstreamKind;
  /** Base URL (of the first target). null: the top-level upstream (native groups only). */
  url: string | null;
  /** Name of the env variable that holds the upstream credential (the first target's). */
  apiKeyEnv: string;
  /**
   * Where the group's requests go (lib/config/upstream-targets.ts): its own `targets`, the one target of its
   * `url` / `apiKeyEnv`, or the top-level upstream's targets. Empty: the embedded simulated upstream.
   */
  targets: UpstreamTargetConfig[];
  /** Time allowed for the reply head, in ms. */
  timeoutMs: number;
}

/** A resolved key group. */
export interface KeyGroupConfig {
  id: string;
  /** Secrets of this group's keys start with this prefix, e.g. `sk-cs4-`. */
  keyPrefix: string;
  /** Catalogue IDs of this group's model family. */
  models: string[];
  upstream: KeyGroupUpstream;
  /**
   * chat-completions groups only: serve `POST /v1/messages` by translating native requests to
   * chat-completions and the replies back. Default false (the native route answers 400).
   */
  reverseTranslation: boolean;
  /**
   * Lifetime of the prompt-cache breakpoints the translated routes put on requests (docs/translation.md
   * "Prompt caching"): `5m` (default) or `1h` (cache writes cost more, a cached prefix lives longer).
   */
  promptCacheTtl: '5m' | '1h';
}

/** JSON schema of one `keyGroups[]` entry. */
export const keyGroupSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
    keyPrefix: { type: 'string', pattern: '^[A-Za-z0-9_-]{3,32}$' },
    models: { type: 'array', items: { type: 'string', minLength: 1 } },
    upstream: {
      type: 'object',
      additionalProperties: false,
      properties: {
        kind: { enum: ['native', 'chat-completions'] },
        url: { type: ['string', 'null'], pattern: '^https?://' },
        apiKeyEnv: { type: 'string', minLength: 1 },
        targets: upstreamTargetsSchema,
        timeoutMs: { type: 'integer', minimum: 1 },
      },
    },
    reverseTranslation: { type: 'boolean' },
    promptCacheTtl: { enum: ['5m', '1h'] },
  },
} as const;

/** The top-level upstream, as the basic group's defaults. */
export interface TopLevelUpstream {
  url: string | null;
  apiKeyEnv: string;
  /** Its targets; empty for the simulated upstream. */
  targets: UpstreamTargetConfig[];
  timeoutMs: number;
}

/**
 * Resolve `keyGroups` against the catalogue.
 *
 * @param raw the `keyGroups` array of config.json (already shape-checked), or undefined
 * @param modelIds every catalogue ID, in config order
 * @param upstream the top-level upstream (the basic group's, and the default for other native groups)
 * @returns the groups, `default` first
 * @throws ConfigError on a duplicate id or prefix, a prefix that is a prefix of another, a model that is
 *   not in the catalogue or in two groups, a chat-completions group without `upstream.url`,
 *   `reverseTranslation` on a native group, `targets` beside `url` / `apiKeyEnv`, or a model no target serves
 */
export function resolveKeyGroups(raw: Array<Record<string, any>> | undefined, modelIds: string[], upstream: TopLevelUpstream): KeyGroupConfig[] {
  const declared = raw ?? [];
  const fail = (where: string, why: string) => new ConfigError(`invalid configuration: keyGroups.${where}: ${why}`);
  const owner = new Map<string, string>();
  const groups: KeyGroupConfig[] = [];
  const known = new Set(modelIds);

  declared.forEach((entry, index) => {
    const id: string = entry.id;
    if (groups.some((group) => group.id === id)) throw fail(`${index}.id`, `duplicate id "${id}"`);
    const basic = id === DEFAULT_KEY_GROUP;
    const kind: UpstreamKind = entry.upstream?.kind ?? 'native';
    if (basic && entry.keyPrefix !== undefined && entry.keyPrefix !== DEFAULT_KEY_PREFIX) {
      throw fail(`${index}.keyPrefix`, `the basic group "default" uses the prefix "${DEFAULT_KEY_PREFIX}"`);
    }
    if (basic && kind !== 'native') throw fail(`${index}.upstream.kind`, 'the basic group "default" is native');
    if (!basic && entry.keyPrefix === undefined) throw fail(`${index}.keyPrefix`, 'field required (e.g. "sk-xyz-")');
    if (!basic && !Array.isArray(entry.models)) throw fail(`${index}.models`, 'field required: the catalogue IDs of this group');
    const ownTargets: Array<Record<string, any>> | undefined = entry.upstream?.targets;
    if (ownTargets && (entry.upstream.url !== undefined || entry.upstream.apiKeyEnv !== undefined)) {
      throw fail(`${index}.upstream`, 'give either "targets" or "url" / "apiKeyEnv" (one target), not both');
    }
    const url: string | null = ownTargets ? ownTargets[0].url ?? null : entry.upstream?.url ?? null;
    if (kind !== 'native' && ownTargets?.some((target) => (target.provider ?? 'anthropic') !== 'anthropic')) {
      throw fail(`${index}.upstream.targets`, 'a cloud target ("provider") serves the native messages API: put it in a native group');
    }
    if (kind === 'chat-completions' && !url) {
      throw fail(`${index}.upstream.url`, 'a chat-completions group needs its upstream URL (there is no simulated one)');
    }
    if (entry.reverseTranslation === true && kind !== 'chat-completions') {
      throw fail(`${index}.reverseTranslation`, 'applies to chat-completions groups only');
    }
    for (const model of entry.models ?? []) {
      if (!known.has(model)) throw fail(`${index}.models`, `"${model}" is not a catalogue model id`);
      if (owner.has(model)) throw fail(`${index}.models`, `"${model}" is already in group "${owner.get(model)}"`);
      owner.set(model, id);
    }
    const apiKeyEnv: string = entry.upstream?.apiKeyEnv ?? (basic || kind === 'native' ? upstream.apiKeyEnv : `${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_API_KEY`);
    let targets: UpstreamTargetConfig[];
    if (ownTargets) {
      targets = resolveUpstreamTargets(ownTargets, `keyGroups.${index}.upstream.targets`, apiKeyEnv, known);
    } else if (url) {
      targets = [singleTarget(url.replace(/\/+$/, ''), [apiKeyEnv])];
    } else if (entry.upstream?.apiKeyEnv !== undefined && upstream.url) {
      // The top-level URL with the group's own credential: a target of its own, not the top-level one.
      targets = [singleTarget(upstream.url, [apiKeyEnv])];
    } else {
      targets = upstream.targets;
    }
    groups.push({
      id,
      keyPrefix: entry.keyPrefix ?? DEFAULT_KEY_PREFIX,
      models: entry.models ?? [],
      upstream: {
        kind,
        url: targets[0]?.url ?? null,
        apiKeyEnv: targets[0]?.apiKeyEnvs[0] ?? apiKeyEnv,
        targets,
        timeoutMs: entry.upstream?.timeoutMs ?? upstream.timeoutMs,
      },
      reverseTranslation: entry.reverseTranslation ?? false,
      promptCacheTtl: entry.promptCacheTtl ?? '5m',
    });
  });

  let basic = groups.find((group) => group.id === DEFAULT_KEY_GROUP);
  if (!basic) {
    basic = {
      id: DEFAULT_KEY_GROUP, keyPrefix: DEFAULT_KEY_PREFIX, models: [],
      upstream: { kind: 'native', url: null, apiKeyEnv: upstream.apiKeyEnv, targets: upstream.targets, timeoutMs: upstream.timeoutMs }, reverseTranslation: false,
      promptCacheTtl: '5m',
    };
    groups.unshift(basic);
  } else {
    groups.splice(groups.indexOf(basic), 1);
    groups.unshift(basic);
  }
  if (!declared.some((entry) => entry.id === DEFAULT_KEY_GROUP && Array.isArray(entry.models))) {
    basic.models = modelIds.filter((model) => !owner.has(model));
  }
  // The basic group's upstream is the top-level one unless the file names another.
  basic.upstream.url ??= upstream.url;

  for (const group of groups) {
    const own = declared.findIndex((entry) => entry.id === group.id && entry.upstream?.targets);
    checkTargetsServe(group.upstream.targets, group.models, own === -1 ? 'upstream.targets' : `keyGroups.${own}.upstream.targets`, group.id);
  }
  for (const model of modelIds) {
    if (!basic.models.includes(model) && !owner.has(model)) {
      throw new ConfigError(`invalid configuration: models: "${model}" belongs to no key group; add it to a group's "models"`);
    }
  }
  for (const a of groups) {
    for (const b of groups) {
      if (a !== b && b.keyPrefix.startsWith(a.keyPrefix)) {
        throw new ConfigError(`invalid configuration: keyGroups: the prefix "${a.keyPrefix}" of "${a.id}" also matches the keys of "${b.id}" ("${b.keyPrefix}")`);
      }
    }
  }
  return groups;
}

/** The group whose prefix a secret starts with, or undefined. */
export function findKeyGroupBySecret(groups: readonly KeyGroupConfig[], secret: string): KeyGroupConfig | undefined {
  return groups.find((group) => secret.startsWith(group.keyPrefix));
}

/**
 * What a request's credit hold is multiplied by: the largest `priceMultiplier` among the targets of
 * `group`'s upstream that may serve it (so the cap holds whichever serves it); 1 without a group.
 * Every route holds through this one rule: a message (middleware/credit-reservation.ts) and a Message
 * Batch (routes/message-batches.ts).
 * @param modelId the request's catalogue model: only the targets serving it count; null for a request
 *   the pool does not route by model (a batch: any target may create it, whatever models it lists; a
 *   message naming files: sent to the target holding them, whatever models it lists)
 * @param mayTake narrows the targets to those that may take the request (a batch: those offering
 *   Message Batches, or the one holding its files; a message naming files: the one holding them);
 *   default every target of the group
 */
export function holdPriceMultiplier(group: KeyGroupConfig | undefined, modelId: string | null, mayTake?: (target: UpstreamTargetConfig) => boolean): number {
  if (!group) return 1;
  return largestPriceMultiplier(mayTake ? group.upstream.targets.filter(mayTake) : group.upstream.targets, modelId);
}
