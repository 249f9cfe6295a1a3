/**
 * Gateway configuration: the config.json schema, loading, env overrides and validation.
 *
 * The names of every field here are fixed (outside tools rely on them); see README "Configuration".
 * A configuration is validated once, at start-up, with ajv, and frozen. Structural mistakes throw a
 * `ConfigError` naming the field; nothing here is checked again at request time.
 */
import fs from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject } from 'ajv';
import { ConfigError } from './config-error';
import { DEFAULT_THINKING_BUDGETS } from '../translators/responses-request';
import { DEFAULT_KEY_GROUP, findKeyGroupBySecret, keyGroupSchema, resolveKeyGroups, type KeyGroupConfig } from './key-groups';

/** Prices of one model, in credits per million tokens. */
export interface ModelPricing {
  inputPerMillion: number;
  outputPerMillion: number;
  /** Price of tokens written to the prompt cache. Default: `inputPerMillion`. */
  cacheWritePerMillion?: number;
  /** Price of tokens read from the prompt cache. Default: `inputPerMillion`. */
  cacheReadPerMillion?: number;
}

/** One entry of the model catalogue. */
export interface ModelConfig {
  /** Canonical catalogue ID, e.g. `model-sonnet-4.6`. */
  id: string;
  /** The model name sent upstream. */
  upstreamModel: string;
  pricing: ModelPricing;
  /** `max_tokens` injected into chat-completions requests that give none. Default: `defaults.maxTokens`. */
  defaultMaxTokens?: number;
  /** Human-readable name for the models listing. Default: the id. */
  displayName?: string;
}

/** A key declared in config.json. Exactly one of `key` and `keySha256` must be given. */
export interface KeyConfig {
  id: string;
  name?: string;
  /** The secret itself (starts with its key group's prefix, `sk-cs4-` for the basic group). */
  key?: string;
  /** Hex SHA-256 of the secret, so the file need not hold it. */
  keySha256?: string;
  /** Requests per minute. Absent: `defaults.rateLimitPerMinute`. */
  rateLimitPerMinute?: number;
  /** Catalogue IDs this key may use. Absent: all. */
  allowedModels?: string[];
  /** Credits per UTC calendar month. Absent or null: no cap. */
  monthlyCreditCap?: number | null;
  revoked?: boolean;
  /** Key group id. Default: the group whose prefix `key` starts with; `default` for `keySha256` keys. */
  keyGroup?: string;
}

export interface UpstreamConfig {
  /** Base URL of a native-format upstream. null: the embedded simulated upstream. */
  url: string | null;
  /** Name of the env variable that holds the upstream credential (the first of `apiKeyEnvs`). */
  apiKeyEnv: string;
  /**
   * Names of the env variables that hold upstream credentials (config.json's `apiKeyEnv` takes one name
   * or a list). Several credentials are used in turn; one that gets a 401 or 429 rests for
   * `credentialRestMs`. Default `["UPSTREAM_API_KEY"]`.
   */
  apiKeyEnvs: string[];
  /** Time allowed for the upstream's reply head, in ms. Default 600000. */
  timeoutMs: number;
  /** Longest gap between two chunks of an upstream reply body before it is ended with an error, in ms. Default 120000. */
  streamIdleTimeoutMs: number;
  /** Retries of a 429/500/502/503/529 or a refused connection, only before the first byte to the client. Default 2. */
  maxRetries: number;
  /** First backoff delay in ms; doubles per retry (capped at 8000), with jitter. Default 500. */
  retryBaseDelayMs: number;
  /** A `retry-after` longer than this (ms) is not waited for: the reply goes to the client. Default 20000. */
  maxRetryAfterMs: number;
  /** How long a credential that got a 401 or 429 is left out of the rotation, in ms. Default 60000. */
  credentialRestMs: number;
}

export interface GatewayConfig {
  /** Public base URL; when set, requests whose Host differs get 421. */
  baseUrl: string | null;
  upstream: UpstreamConfig;
  models: ModelConfig[];
  /** Alias -> canonical catalogue ID. */
  aliases: Record<string, string>;
  keys: KeyConfig[];
  /** The key groups, the basic group `default` first (see lib/key-groups.ts). */
  keyGroups: KeyGroupConfig[];
  defaults: {
    /** Default `max_tokens` for chat-completions requests that give none. Default 4096. */
    maxTokens: number;
    /** Requests per minute for keys that set none. Default 60. */
    rateLimitPerMinute: number;
  };
  limits: {
    /** Largest accepted request body, in bytes. Default 33554432 (32 MiB, as the upstream). */
    bodyBytes: number;
    /**
     * Slow-client guard: while a request body is incomplete, every window of `bodyTimeoutMs` must bring
     * at least `bodyMinBytesPerSecond` × window bytes, else the request is cut off with 408.
     * Defaults 10000 ms and 1024 bytes/s.
     */
    bodyTimeoutMs: number;
    bodyMinBytesPerSecond: number;
  };
  /**
   * How a request's worst case is bounded when credits are reserved against the monthly cap: input
   * tokens <= ceil(body bytes / bytesPerInputToken) + overheadInputTokens, output tokens <= max_tokens.
   */
  reservation: {
    /** Bytes of request JSON per input token assumed. Default 1 (no tokenizer packs a token into less than a byte of text). */
    bytesPerInputToken: number;
    /** Input tokens the upstream adds that are not in the body (tool-use system prompt, turn markers). Default 1024. */
    overheadInputTokens: number;
  };
  /** On SIGTERM: how long in-flight requests and streams may run before they are cut, in ms. Default 25000. */
  shutdownGraceMs: number;
  /** The Responses route (`POST /v1/responses`, docs/responses.md). */
  responses: {
    /**
     * Native thinking budget (tokens) per `reasoning.effort`; an effort not listed turns thinking off.
     * Default {minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32768}.
     */
    thinkingBudgets: Record<string, number>;
    /** How long a stored response (`store: true`) is kept for `previous_response_id` and GET, in ms. Default 86400000 (24 h). */
    storeTtlMs: number;
  };
  /** What to do while the store (Redis) cannot be reached (lib/store/guard.ts). */
  store: {
    /** Serve requests unmetered (logged at every request) instead of 503. Default false. */
    failOpen: boolean;
    /** Longest wait for one store call, in ms. Default 2000. */
    timeoutMs: number;
  };
  /** The listening port. From env PORT, default 8080. */
  port: number;
  /** From env REDIS_URL; null means the in-memory store. */
  redisUrl: string | null;
  /** From env REDIS_PREFIX, default `gateway:`: prefix of every Redis key, so several deployments can share one server. */
  redisPrefix: string;
  /**
   * From env GATEWAY_STATE_FILE, default `.gateway-usage.json` (in the working directory): where the
   * in-memory store is written on graceful shutdown and read at start. Unused with Redis.
   */
  stateFile: string;
  /** From env LOG_LEVEL, default `info`. */
  logLevel: string;
  /** From env METRICS_TOKEN: when set, `GET /metrics` needs `Authorization: Bearer <token>`. */
  metricsToken: string | null;
  /** From env ADMIN_TOKEN: the bearer token of the admin API and dashboard; null turns both off (404). */
  adminToken: string | null;
}

export { ConfigError };

const pricingSchema = {
  type: 'object',
  required: ['inputPerMillion', 'outputPerMillion'],
  additionalProperties: false,
  properties: {
    inputPerMillion: { type: 'number', minimum: 0 },
    outputPerMillion: { type: 'number', minimum: 0 },
    cacheWritePerMillion: { type: 'number', minimum: 0 },
    cacheReadPerMillion: { type: 'number', minimum: 0 },
  },
};

/** JSON schema of config.json (draft-07, as ajv's default). */
export const configSchema = {
  type: 'object',
  required: ['upstream', 'models'],
  additionalProperties: false,
  properties: {
    $schema: { type: 'string' },
    baseUrl: { type: ['string', 'null'], format: 'uri' },
    upstream: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: { type: ['string', 'null'], pattern: '^https?://' },
        apiKeyEnv: {
          anyOf: [
            { type: 'string', minLength: 1 },
            { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
          ],
        },
        timeoutMs: { type: 'integer', minimum: 1 },
        streamIdleTimeoutMs: { type: 'integer', minimum: 1 },
        maxRetries: { type: 'integer', minimum: 0, maximum: 10 },
        retryBaseDelayMs: { type: 'integer', minimum: 0 },
        maxRetryAfterMs: { type: 'integer', minimum: 0 },
        credentialRestMs: { type: 'integer', minimum: 0 },
      },
    },
    models: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['id', 'upstreamModel', 'pricing'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', minLength: 1 },
          upstreamModel: { type: 'string', minLength: 1 },
          pricing: pricingSchema,
          defaultMaxTokens: { type: 'integer', minimum: 1 },
          displayName: { type: 'string' },
        },
      },
    },
    aliases: { type: 'object', additionalProperties: { type: 'string', minLength: 1 } },
    keys: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id'],
        additionalProperties: false,
        oneOf: [{ required: ['key'] }, { required: ['keySha256'] }],
        properties: {
          id: { type: 'string', minLength: 1, pattern: '^[A-Za-z0-9._-]+$' },
          name: { type: 'string' },
          key: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{10,}$' },
          keySha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          rateLimitPerMinute: { type: 'integer', minimum: 1 },
          allowedModels: { type: 'array', items: { type: 'string' } },
          monthlyCreditCap: { type: ['number', 'null'], minimum: 0 },
          revoked: { type: 'boolean' },
          keyGroup: { type: 'string', minLength: 1 },
        },
      },
    },
    keyGroups: { type: 'array', items: keyGroupSchema },
    defaults: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxTokens: { type: 'integer', minimum: 1 },
        rateLimitPerMinute: { type: 'integer', minimum: 1 },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        bodyBytes: { type: 'integer', minimum: 1024 },
        bodyTimeoutMs: { type: 'integer', minimum: 1 },
        bodyMinBytesPerSecond: { type: 'integer', minimum: 0 },
      },
    },
    reservation: {
      type: 'object',
      additionalProperties: false,
      properties: {
        bytesPerInputToken: { type: 'number', exclusiveMinimum: 0 },
        overheadInputTokens: { type: 'integer', minimum: 0 },
      },
    },
    shutdownGraceMs: { type: 'integer', minimum: 0 },
    responses: {
      type: 'object',
      additionalProperties: false,
      properties: {
        // The native minimum budget is 1024 tokens.
        thinkingBudgets: { type: 'object', additionalProperties: { type: 'integer', minimum: 1024 } },
        storeTtlMs: { type: 'integer', minimum: 1000 },
      },
    },
    store: {
      type: 'object',
      additionalProperties: false,
      properties: { failOpen: { type: 'boolean' }, timeoutMs: { type: 'integer', minimum: 1 } },
    },
  },
} as const;

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

/** The environment variables the configuration reads. */
export interface ConfigEnv {
  PORT?: string;
  UPSTREAM_URL?: string;
  UPSTREAM_API_KEY?: string;
  REDIS_URL?: string;
  REDIS_PREFIX?: string;
  GATEWAY_STATE_FILE?: string;
  LOG_LEVEL?: string;
  METRICS_TOKEN?: string;
  ADMIN_TOKEN?: string;
  [name: string]: string | undefined;
}

/**
 * Validate a parsed config object, apply defaults and env overrides, and check cross-references
 * (aliases and `allowedModels` must name catalogue IDs; ids must be unique).
 *
 * @param raw the parsed config.json
 * @param env environment (PORT, UPSTREAM_URL, REDIS_URL, REDIS_PREFIX, GATEWAY_STATE_FILE, LOG_LEVEL override the file; METRICS_TOKEN, ADMIN_TOKEN)
 * @returns a frozen `GatewayConfig`
 * @throws ConfigError naming the first offending fields
 */
export function parseConfig(raw: unknown, env: ConfigEnv = process.env): GatewayConfig {
  if (!validateConfigShape(raw)) {
    const details = (validateConfigShape.errors ?? []).map(describeAjvError);
    throw new ConfigError(`invalid configuration: ${[...new Set(details)].join('; ')}`);
  }
  const file = raw as Record<string, any>;
  const models: ModelConfig[] = file.models;
  const modelIds = new Set<string>();
  for (const model of models) {
    if (modelIds.has(model.id)) throw new ConfigError(`invalid configuration: models: duplicate id "${model.id}"`);
    modelIds.add(model.id);
  }
  const aliases: Record<string, string> = file.aliases ?? {};
  for (const [alias, target] of Object.entries(aliases)) {
    if (!modelIds.has(target)) {
      throw new ConfigError(`invalid configuration: aliases.${alias}: "${target}" is not a catalogue model id`);
    }
    if (modelIds.has(alias)) throw new ConfigError(`invalid configuration: aliases.${alias}: shadows a catalogue id`);
  }
  const upstreamUrl = env.UPSTREAM_URL || file.upstream.url || null;
  if (upstreamUrl !== null && !/^https?:\/\//.test(upstreamUrl)) {
    throw new ConfigError(`invalid configuration: upstream.url (or UPSTREAM_URL): "${upstreamUrl}" must start with http:// or https://`);
  }
  const apiKeyEnvs: string[] = [file.upstream.apiKeyEnv ?? 'UPSTREAM_API_KEY'].flat();
  const upstream: UpstreamConfig = {
    url: upstreamUrl ? upstreamUrl.replace(/\/+$/, '') : null,
    apiKeyEnv: apiKeyEnvs[0],
    apiKeyEnvs,
    timeoutMs: file.upstream.timeoutMs ?? 600_000,
    streamIdleTimeoutMs: file.upstream.streamIdleTimeoutMs ?? 120_000,
    maxRetries: file.upstream.maxRetries ?? 2,
    retryBaseDelayMs: file.upstream.retryBaseDelayMs ?? 500,
    maxRetryAfterMs: file.upstream.maxRetryAfterMs ?? 20_000,
    credentialRestMs: file.upstream.credentialRestMs ?? 60_000,
  };
  const keyGroups = resolveKeyGroups(file.keyGroups, models.map((model) => model.id), upstream);
  const keys: KeyConfig[] = (file.keys ?? []).map((key: KeyConfig, index: number) => resolveKeyGroupOfKey(key, index, keyGroups));
  const keyIds = new Set<string>();
  keys.forEach((key, index) => {
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
    defaults: {
      maxTokens: file.defaults?.maxTokens ?? 4096,
      rateLimitPerMinute: file.defaults?.rateLimitPerMinute ?? 60,
    },
    reservation: {
      bytesPerInputToken: file.reservation?.bytesPerInputToken ?? 1,
      overheadInputTokens: file.reservation?.overheadInputTokens ?? 1024,
    },
    limits: {
      bodyBytes: file.limits?.bodyBytes ?? 32 * 1024 * 1024,
      bodyTimeoutMs: file.limits?.bodyTimeoutMs ?? 10_000,
      bodyMinBytesPerSecond: file.limits?.bodyMinBytesPerSecond ?? 1024,
    },
    shutdownGraceMs: file.shutdownGraceMs ?? 25_000,
    responses: {
      thinkingBudgets: { ...DEFAULT_THINKING_BUDGETS, ...file.responses?.thinkingBudgets },
      storeTtlMs: file.responses?.storeTtlMs ?? 24 * 60 * 60 * 1000,
    },
    store: { failOpen: file.store?.failOpen ?? false, timeoutMs: file.store?.timeoutMs ?? 2000 },
    port,
    redisUrl: env.REDIS_URL || null,
    redisPrefix: env.REDIS_PREFIX || 'gateway:',
    stateFile: env.GATEWAY_STATE_FILE || '.gateway-usage.json',
    logLevel: env.LOG_LEVEL || 'info',
    metricsToken: env.METRICS_TOKEN || null,
    adminToken: parseAdminToken(env.ADMIN_TOKEN),
  };
  return deepFreeze(config);
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
  if (token.startsWith('sk-cs4-')) {
    throw new ConfigError('invalid configuration: ADMIN_TOKEN must not look like an API key (sk-cs4-...); the admin surface has its own token');
  }
  return token;
}

/**
 * Read and validate a config file.
 *
 * @param file path of the JSON file. Default: env `GATEWAY_CONFIG`, else `config.json` at the repo root.
 * @throws ConfigError when the file is missing, not JSON, or invalid (the message names the field)
 */
export function loadConfig(file?: string, env: ConfigEnv = process.env): GatewayConfig {
  return parseConfig(readConfigFile(file ?? env.GATEWAY_CONFIG ?? path.resolve(__dirname, '..', '..', 'config.json')), env);
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
