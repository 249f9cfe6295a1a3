/** JSON schema of config.json (draft-07, as ajv's default), validated once at start-up. */
import { keyGroupSchema } from './key-groups';
import { authSchema, teamSchema } from './people';
import { upstreamTargetsSchema } from './upstream-targets';

const pricingSchema = {
  type: 'object',
  required: ['inputPerMillion', 'outputPerMillion'],
  additionalProperties: false,
  properties: {
    inputPerMillion: { type: 'number', minimum: 0 },
    outputPerMillion: { type: 'number', minimum: 0 },
    cacheWritePerMillion: { type: 'number', minimum: 0 },
    cacheReadPerMillion: { type: 'number', minimum: 0 },
    cacheWrite1hPerMillion: { type: 'number', minimum: 0 },
    webSearchPerRequest: { type: 'number', minimum: 0 },
    webFetchPerRequest: { type: 'number', minimum: 0 },
    codeExecutionPerRequest: { type: 'number', minimum: 0 },
    fastModeMultiplier: { type: 'number', minimum: 1 },
  },
};

/** A model's capabilities (translators/model-capabilities.ts). */
const capabilitiesSchema = {
  type: 'object',
  required: ['thinking', 'sampling', 'maxOutputTokens', 'contextWindow', 'minCacheableTokens'],
  additionalProperties: false,
  properties: {
    thinking: { enum: ['adaptive', 'budget', 'both', 'none'] },
    thinkingDefault: { enum: ['off', 'on', 'always'] },
    efforts: { type: 'array', uniqueItems: true, items: { enum: ['low', 'medium', 'high', 'xhigh', 'max'] } },
    sampling: { type: 'array', uniqueItems: true, items: { enum: ['temperature', 'top_p', 'top_k'] } },
    samplingExclusive: { type: 'boolean' },
    maxOutputTokens: { type: 'integer', minimum: 1 },
    contextWindow: { type: 'integer', minimum: 1 },
    minCacheableTokens: { type: 'integer', minimum: 0 },
  },
};

/** One catalogue model, with the fields `required`. */
function modelSchema(required: string[]) {
  return {
    type: 'object',
    required,
    additionalProperties: false,
    properties: {
      id: { type: 'string', minLength: 1 },
      upstreamModel: { type: 'string', minLength: 1 },
      pricing: pricingSchema,
      defaultMaxTokens: { type: 'integer', minimum: 1 },
      displayName: { type: 'string' },
      capabilities: capabilitiesSchema,
    },
  };
}

/** Budget alert thresholds: 1 to 10 distinct whole percentages of the monthly credit cap, 1 to 100. */
export const alertThresholdsSchema = {
  type: 'array', minItems: 1, maxItems: 10, uniqueItems: true, items: { type: 'integer', minimum: 1, maximum: 100 },
} as const;

/** JSON schema of config.json (draft-07, as ajv's default). */
export const configSchema = {
  type: 'object',
  // Every field has a default: `upstream` none (the simulated upstream), `models` the shipped catalogue.
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
        targets: upstreamTargetsSchema,
        timeoutMs: { type: 'integer', minimum: 1 },
        streamIdleTimeoutMs: { type: 'integer', minimum: 1 },
        maxRetries: { type: 'integer', minimum: 0, maximum: 10 },
        retryBaseDelayMs: { type: 'integer', minimum: 0 },
        maxRetryAfterMs: { type: 'integer', minimum: 0 },
        credentialRestMs: { type: 'integer', minimum: 0 },
        breakerThreshold: { type: 'integer', minimum: 1, maximum: 100 },
        breakerCooldownMs: { type: 'integer', minimum: 0 },
      },
    },
    // The whole catalogue; absent: the shipped one (shipped-catalogue.ts).
    models: { type: 'array', minItems: 1, items: modelSchema(['id', 'upstreamModel', 'pricing']) },
    // Merged by id over the catalogue: a new model's `upstreamModel` and `pricing` are checked there.
    modelOverrides: { type: 'array', items: modelSchema(['id']) },
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
          team: { type: 'string', minLength: 1 },
          owner: { type: 'string', minLength: 1 },
        },
      },
    },
    auth: authSchema,
    teams: { type: 'array', items: teamSchema },
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
        fileBytes: { type: 'integer', minimum: 1024, maximum: 524288000 },
      },
    },
    reservation: {
      type: 'object',
      additionalProperties: false,
      properties: {
        bytesPerInputToken: { type: 'number', exclusiveMinimum: 0 },
        overheadInputTokens: { type: 'integer', minimum: 0 },
        webSearchesPerRequest: { type: 'integer', minimum: 0 },
        minOutputTokens: { type: 'integer', minimum: 1 },
      },
    },
    shutdownGraceMs: { type: 'integer', minimum: 0 },
    shutdownDelayMs: { type: 'integer', minimum: 0 },
    responses: {
      type: 'object',
      additionalProperties: false,
      properties: {
        // The native minimum budget is 1024 tokens.
        thinkingBudgets: { type: 'object', additionalProperties: { type: 'integer', minimum: 1024 } },
        storeTtlMs: { type: 'integer', minimum: 1000 },
        maxStoredBytesPerKey: { type: 'integer', minimum: 1024 },
      },
    },
    store: {
      type: 'object',
      additionalProperties: false,
      properties: { failOpen: { type: 'boolean' }, timeoutMs: { type: 'integer', minimum: 1 } },
    },
    requestLog: {
      type: 'object',
      additionalProperties: false,
      properties: {
        retentionDays: { type: 'integer', minimum: 1, maximum: 400 },
        maxMemoryRecords: { type: 'integer', minimum: 1000, maximum: 10_000_000 },
      },
    },
    alerts: {
      type: 'object',
      additionalProperties: false,
      properties: {
        webhookUrl: { type: ['string', 'null'], pattern: '^https?://' },
        thresholds: alertThresholdsSchema,
        timeoutMs: { type: 'integer', minimum: 1 },
        retryBaseDelayMs: { type: 'integer', minimum: 1 },
        retryForMs: { type: 'integer', minimum: 0 },
        pollIntervalMs: { type: 'integer', minimum: 10 },
      },
    },
  },
} as const;
