/**
 * Gateway configuration: loading config.json, env overrides and validation.
 *
 * A configuration is validated once, at start-up, with ajv (schema.ts), and frozen. Structural
 * mistakes throw a `ConfigError` naming the field; nothing here is checked again at request time.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject } from 'ajv';
import { ConfigError } from './config-error';
import { UPSTREAM_DEFAULTS } from '../upstream/client';
import { DEFAULT_KEY_GROUP, DEFAULT_KEY_PREFIX, findKeyGroupBySecret, resolveKeyGroups, type KeyGroupConfig } from './key-groups';
import { DEFAULT_THINKING_BUDGETS } from '../../translators/responses-request';
import { resolveTopLevelTargets } from './upstream-targets';
import { resolveAuth, resolveTeams, checkSignIn } from './people';
import { configSchema } from './schema';
import { mergeModels, readShippedCatalogue } from './shipped-catalogue';
import type { ConfigEnv, GatewayConfig, KeyConfig, ModelConfig, UpstreamConfig } from './types';

export * from './types';
export { alertThresholdsSchema, configSchema } from './schema';
export { ConfigError };

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addFormat('uri', /^https?:\/\/[^\s/]+/);
const validateConfigShape = ajv.compile(configSchema);

function describeAjvError(error: ErrorObject): string {
  const where = error.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : '(root)';
  if (error.keyword === 'additionalProperties') {
    return `${where}: unknown field "${String(error.params.additionalProperty)}"`;
  }
  if (error.keyword === 'oneOf') return `${where}: give exactly one of "key" and "keySha256"`;
  return `${where}: ${error.message ?? 'is invalid'}`;
}

/**
 * Validate a parsed config object, apply defaults and env overrides, and check cross-references
 * (aliases and `allowedModels` must name catalogue IDs; ids must be unique).
 *
 * @param raw the parsed config.json
 * @param env environment (PORT, UPSTREAM_URL, REDIS_URL, REDIS_PREFIX, REDIS_CLUSTER_NODES, REDIS_TLS_CA, REDIS_CONNECT_TIMEOUT_MS, GATEWAY_STATE_FILE, LOG_LEVEL override the file; METRICS_TOKEN, ADMIN_TOKEN)
 * @returns a frozen `GatewayConfig`
 * @throws ConfigError naming the first offending fields
 */
export function parseConfig(raw: unknown, env: ConfigEnv = process.env): GatewayConfig {
  if (!validateConfigShape(raw)) {
    const details = (validateConfigShape.errors ?? []).map(describeAjvError);
    throw new ConfigError(`invalid configuration: ${[...new Set(details)].join('; ')}`);
  }
  const file = raw as Record<string, any>;
  const models = catalogueOf(file);
  const modelIds = new Set<string>();
  for (const model of models) {
    if (modelIds.has(model.id)) throw new ConfigError(`invalid configuration: models: duplicate id "${model.id}"`);
    modelIds.add(model.id);
  }
  // The shipped aliases go with the shipped catalogue; a catalogue of the file's own has none unless listed.
  const aliases: Record<string, string> = file.aliases ?? (file.models ? {} : readShippedCatalogue(readConfigFile).aliases);
  for (const [alias, target] of Object.entries(aliases)) {
    if (!modelIds.has(target)) {
      throw new ConfigError(`invalid configuration: aliases.${alias}: "${target}" is not a catalogue model id`);
    }
    if (modelIds.has(alias)) throw new ConfigError(`invalid configuration: aliases.${alias}: shadows a catalogue id`);
  }
  const upstreamSection: Record<string, any> = file.upstream ?? {};
  const { url: upstreamUrl, apiKeyEnvs, targets } = resolveTopLevelTargets(upstreamSection, env, modelIds);
  const upstream: UpstreamConfig = {
    url: upstreamUrl,
    apiKeyEnv: apiKeyEnvs[0],
    apiKeyEnvs,
    targets,
    timeoutMs: upstreamSection.timeoutMs ?? 600_000,
    streamIdleTimeoutMs: upstreamSection.streamIdleTimeoutMs ?? UPSTREAM_DEFAULTS.streamIdleTimeoutMs,
    maxRetries: upstreamSection.maxRetries ?? UPSTREAM_DEFAULTS.maxRetries,
    retryBaseDelayMs: upstreamSection.retryBaseDelayMs ?? UPSTREAM_DEFAULTS.retryBaseDelayMs,
    maxRetryAfterMs: upstreamSection.maxRetryAfterMs ?? UPSTREAM_DEFAULTS.maxRetryAfterMs,
    credentialRestMs: upstreamSection.credentialRestMs ?? UPSTREAM_DEFAULTS.credentialRestMs,
    breakerThreshold: upstreamSection.breakerThreshold ?? UPSTREAM_DEFAULTS.breakerThreshold,
    breakerCooldownMs: upstreamSection.breakerCooldownMs ?? UPSTREAM_DEFAULTS.breakerCooldownMs,
  };
  const keyGroups = resolveKeyGroups(file.keyGroups, models.map((model) => model.id), upstream);
  const keys: KeyConfig[] = (file.keys ?? []).map((key: KeyConfig, index: number) => resolveKeyGroupOfKey(key, index, keyGroups));
  const teams = resolveTeams(file.teams, modelIds);
  const keyIds = new Set<string>();
  keys.forEach((key, index) => {
    if (key.team !== undefined && !teams.some((team) => team.id === key.team)) {
      throw new ConfigError(`invalid configuration: keys.${index}.team: "${key.team}" is not the id of a team in teams[]`);
    }
    if (keyIds.has(key.id)) throw new ConfigError(`invalid configuration: keys.${index}.id: duplicate id "${key.id}"`);
    keyIds.add(key.id);
    const group = keyGroups.find((candidate) => candidate.id === key.keyGroup)!;
    for (const model of key.allowedModels ?? []) {
      if (!modelIds.has(model)) {
        throw new ConfigError(`invalid configuration: keys.${index}.allowedModels: "${model}" is not a catalogue model id`);
      }
      if (!group.models.includes(model)) {
        throw new ConfigError(`invalid configuration: keys.${index}.allowedModels: "${model}" is not in the catalogue of key group "${group.id}"`);
      }
    }
  });

  if (file.alerts?.webhookUrl && !env.ALERTS_WEBHOOK_SECRET) {
    throw new ConfigError('invalid configuration: alerts.webhookUrl is set but env ALERTS_WEBHOOK_SECRET is not: alerts are signed with it (try: openssl rand -hex 32)');
  }

  const port = env.PORT !== undefined && env.PORT !== '' ? Number(env.PORT) : 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`invalid configuration: PORT: "${env.PORT}" is not a port number`);
  }

  const config: GatewayConfig = {
    baseUrl: file.baseUrl ?? null,
    upstream,
    models,
    aliases,
    keys,
    keyGroups,
    auth: resolveAuth(file.auth, env),
    teams,
    defaults: {
      maxTokens: file.defaults?.maxTokens ?? 4096,
      rateLimitPerMinute: file.defaults?.rateLimitPerMinute ?? 60,
    },
    reservation: {
      bytesPerInputToken: file.reservation?.bytesPerInputToken ?? 1,
      overheadInputTokens: file.reservation?.overheadInputTokens ?? 1024,
      webSearchesPerRequest: file.reservation?.webSearchesPerRequest ?? 10,
      minOutputTokens: file.reservation?.minOutputTokens ?? 16,
    },
    limits: {
      bodyBytes: file.limits?.bodyBytes ?? 32 * 1024 * 1024,
      bodyTimeoutMs: file.limits?.bodyTimeoutMs ?? 10_000,
      bodyMinBytesPerSecond: file.limits?.bodyMinBytesPerSecond ?? 1024,
      fileBytes: file.limits?.fileBytes ?? 100 * 1024 * 1024,
    },
    shutdownGraceMs: file.shutdownGraceMs ?? 25_000,
    shutdownDelayMs: file.shutdownDelayMs ?? 5000,
    responses: {
      thinkingBudgets: { ...DEFAULT_THINKING_BUDGETS, ...file.responses?.thinkingBudgets },
      storeTtlMs: file.responses?.storeTtlMs ?? 24 * 60 * 60 * 1000,
      maxStoredBytesPerKey: file.responses?.maxStoredBytesPerKey ?? 64 * 1024 * 1024,
    },
    store: { failOpen: file.store?.failOpen ?? false, timeoutMs: file.store?.timeoutMs ?? 2000 },
    requestLog: {
      retentionDays: file.requestLog?.retentionDays ?? 30,
      maxMemoryRecords: file.requestLog?.maxMemoryRecords ?? 100_000,
    },
    alerts: {
      webhookUrl: file.alerts?.webhookUrl ?? null,
      thresholds: [...(file.alerts?.thresholds ?? [50, 80, 100])].sort((a: number, b: number) => a - b),
      timeoutMs: file.alerts?.timeoutMs ?? 10_000,
      retryBaseDelayMs: file.alerts?.retryBaseDelayMs ?? 5000,
      retryForMs: file.alerts?.retryForMs ?? 3_600_000,
      pollIntervalMs: file.alerts?.pollIntervalMs ?? 5000,
    },
    alertsWebhookSecret: env.ALERTS_WEBHOOK_SECRET || null,
    port,
    redisUrl: env.REDIS_URL || null,
    redisPrefix: parseRedisPrefix(env.REDIS_PREFIX),
    redisClusterNodes: parseRedisClusterNodes(env.REDIS_CLUSTER_NODES),
    redisTlsCaFile: env.REDIS_TLS_CA || null,
    redisConnectTimeoutMs: parsePositiveInteger('REDIS_CONNECT_TIMEOUT_MS', env.REDIS_CONNECT_TIMEOUT_MS, 5000),
    stateFile: env.GATEWAY_STATE_FILE || '.gateway-usage.json',
    logLevel: env.LOG_LEVEL || 'info',
    metricsToken: env.METRICS_TOKEN || null,
    adminToken: parseAdminToken(env.ADMIN_TOKEN),
  };
  checkSignIn(config.auth, config.baseUrl);
  return deepFreeze(config);
}

/**
 * The catalogue of a config file: its `models` (the whole catalogue), else the shipped one, with its
 * `modelOverrides` merged over it by id.
 * @throws ConfigError as `mergeModels` and `readShippedCatalogue`
 */
function catalogueOf(file: Record<string, any>): ModelConfig[] {
  const base: ModelConfig[] = file.models ?? readShippedCatalogue(readConfigFile).models;
  return file.modelOverrides ? mergeModels(base, file.modelOverrides) : base;
}

/**
 * REDIS_PREFIX, default `gateway:`.
 * @throws ConfigError when it holds `{` or `}` (Redis Cluster would read them as every key's hash tag)
 */
function parseRedisPrefix(value: string | undefined): string {
  const prefix = value || 'gateway:';
  if (/[{}]/.test(prefix)) throw new ConfigError(`invalid configuration: REDIS_PREFIX "${prefix}" must not contain "{" or "}"`);
  return prefix;
}

/**
 * REDIS_CLUSTER_NODES: comma-separated `redis://` or `rediss://` URLs; null when unset or empty.
 * @throws ConfigError naming the entry that is not such a URL
 */
function parseRedisClusterNodes(value: string | undefined): string[] | null {
  const urls = (value ?? '').split(',').map((url) => url.trim()).filter((url) => url !== '');
  for (const url of urls) {
    if (!/^rediss?:\/\/[^/]+/.test(url)) throw new ConfigError(`invalid configuration: REDIS_CLUSTER_NODES entry "${url.replace(/:[^:@/]*@/, ':***@')}" is not a redis:// or rediss:// URL`);
  }
  return urls.length > 0 ? urls : null;
}

/**
 * A positive integer from the environment, or `fallback` when unset.
 * @throws ConfigError naming the variable when it is set to anything else
 */
function parsePositiveInteger(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^[1-9]\d*$/.test(value)) throw new ConfigError(`invalid configuration: ${name} must be a positive integer (ms), not "${value}"`);
  return Number(value);
}

/** Shortest ADMIN_TOKEN accepted: it guards every key, so it must not be guessable. */
export const ADMIN_TOKEN_MIN_LENGTH = 16;

/**
 * The admin token from env ADMIN_TOKEN: unset or empty turns the admin surface off (null).
 * @throws ConfigError when it is shorter than 16 characters, has whitespace, or looks like an API key
 */
function parseAdminToken(token: string | undefined): string | null {
  if (!token) return null;
  if (token.length < ADMIN_TOKEN_MIN_LENGTH || /\s/.test(token)) {
    throw new ConfigError(`invalid configuration: ADMIN_TOKEN must be at least ${ADMIN_TOKEN_MIN_LENGTH} characters without spaces (try: openssl rand -hex 32)`);
  }
  if (token.startsWith(DEFAULT_KEY_PREFIX)) {
    throw new ConfigError(`invalid configuration: ADMIN_TOKEN must not look like an API key (${DEFAULT_KEY_PREFIX}...); the admin surface has its own token`);
  }
  return token;
}

/** The config file read when none is named: env GATEWAY_CONFIG, else the shipped config.json (next to package.json). */
export function defaultConfigFile(env: ConfigEnv = process.env): string {
  // From dist/lib/config/ up to the package's root.
  return env.GATEWAY_CONFIG ?? path.resolve(__dirname, '..', '..', '..', 'config.json');
}

/**
 * Read and validate a config file.
 *
 * @param file path of the JSON file. Default: {@link defaultConfigFile}.
 * @throws ConfigError when the file is missing, not JSON, or invalid (the message names the field)
 */
export function loadConfig(file?: string, env: ConfigEnv = process.env): GatewayConfig {
  return parseConfig(readConfigFile(file ?? defaultConfigFile(env)), env);
}

/**
 * Read a config file as a parsed, not yet validated, object.
 * @throws ConfigError when the file is missing or not JSON
 */
export function readConfigFile(where: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(where, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read configuration file ${where}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`configuration file ${where} is not valid JSON: ${(err as Error).message}`);
  }
}

/** A config key with its key group settled: named, or found by the prefix of its secret. */
function resolveKeyGroupOfKey(key: KeyConfig, index: number, groups: KeyGroupConfig[]): KeyConfig {
  const byPrefix = key.key === undefined ? undefined : findKeyGroupBySecret(groups, key.key);
  if (key.key !== undefined && !byPrefix) {
    const prefixes = groups.map((group) => `"${group.keyPrefix}"`).join(', ');
    throw new ConfigError(`invalid configuration: keys.${index}.key: must start with a key group prefix (${prefixes})`);
  }
  const keyGroup = key.keyGroup ?? byPrefix?.id ?? DEFAULT_KEY_GROUP;
  if (!groups.some((group) => group.id === keyGroup)) {
    throw new ConfigError(`invalid configuration: keys.${index}.keyGroup: "${keyGroup}" is not a key group`);
  }
  if (byPrefix && byPrefix.id !== keyGroup) {
    throw new ConfigError(`invalid configuration: keys.${index}.keyGroup: "${keyGroup}" does not match the key's prefix (group "${byPrefix.id}")`);
  }
  return { ...key, keyGroup };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}
