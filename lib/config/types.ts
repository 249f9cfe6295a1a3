/**
 * The types of a resolved gateway configuration (what `parseConfig` returns, frozen). The names of
 * every field are fixed (outside tools rely on them); see docs/operations.md "Configuration".
 */
import type { KeyGroupConfig } from './key-groups';
import type { AuthConfig, TeamConfig } from './people';

export type { AuthConfig, OidcConfig, TeamConfig } from './people';
import type { UpstreamTargetConfig } from './upstream-targets';
import type { ModelCapabilities } from '../../translators/model-capabilities';

export type { ModelCapabilities } from '../../translators/model-capabilities';

/**
 * Prices of one model, in credits per million tokens (server tools: per request). A price left out
 * follows the provider's published ratio to the input price (lib/billing/pricing.ts PUBLISHED_RATIOS).
 */
export interface ModelPricing {
  inputPerMillion: number;
  outputPerMillion: number;
  /** Price of tokens written to the 5-minute prompt cache. Default: 1.25 x `inputPerMillion`. */
  cacheWritePerMillion?: number;
  /** Price of tokens read from the prompt cache. Default: 0.1 x `inputPerMillion`. */
  cacheReadPerMillion?: number;
  /** Price of tokens written to the 1-hour prompt cache (`cache_creation.ephemeral_1h_input_tokens`). Default: 2 x `inputPerMillion`. */
  cacheWrite1hPerMillion?: number;
  /** Credits per server-side web search (`server_tool_use.web_search_requests`). Default 0.01 (10 per 1,000). */
  webSearchPerRequest?: number;
  /** Credits per server-side web fetch (`server_tool_use.web_fetch_requests`). Default 0 (its tokens are billed). */
  webFetchPerRequest?: number;
  /** Credits per server-side code execution (`server_tool_use.code_execution_requests`). Default 0 (see docs/spend.md). */
  codeExecutionPerRequest?: number;
  /**
   * Multiplier of every token price of a fast-mode reply (`usage.speed: "fast"`); absent: the model has
   * no fast mode (such a reply is billed at the standard rate and logged).
   */
  fastModeMultiplier?: number;
}

/** One entry of the model catalogue. */
export interface ModelConfig {
  /** Canonical catalogue ID, e.g. `model-sonnet-4.6`. */
  id: string;
  /** The model name sent upstream. */
  upstreamModel: string;
  pricing: ModelPricing;
  /**
   * `max_tokens` of translated requests (chat, Responses) that give none. Default: the output ceiling
   * (`capabilities.maxOutputTokens`), else `defaults.maxTokens`.
   */
  defaultMaxTokens?: number;
  /** Human-readable name for the models listing. Default: the id. */
  displayName?: string;
  /**
   * What the model accepts, read by the translated routes (thinking mode, efforts, sampling fields,
   * output ceiling, context window, minimum cacheable prompt); see docs/translation.md "Model
   * capabilities". Absent: requests pass as given, reasoning efforts are ignored.
   */
  capabilities?: ModelCapabilities;
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
  /** The team the key belongs to (its caps and policy apply, lib/config/people.ts). */
  team?: string;
  /** The user (OIDC subject) the key belongs to: the member whose cap it counts against. */
  owner?: string;
}

export interface UpstreamConfig {
  /** Base URL of a native-format upstream (the first target's). null: the embedded simulated upstream. */
  url: string | null;
  /** Name of the env variable that holds the upstream credential (the first of `apiKeyEnvs`). */
  apiKeyEnv: string;
  /**
   * Names of the env variables that hold upstream credentials (config.json's `apiKeyEnv` takes one name
   * or a list). Several credentials are used in turn; one that gets a 401 or 429 rests for
   * `credentialRestMs`. Default `["UPSTREAM_API_KEY"]`.
   */
  apiKeyEnvs: string[];
  /**
   * Where requests go (lib/config/upstream-targets.ts): config.json's `targets` (each with its own `url`,
   * `apiKeyEnv`, `weight`, `models`), or the one target `default` of `url` / `apiKeyEnv`. Empty for
   * the simulated upstream. `url` and `apiKeyEnvs` above are the first target's.
   */
  targets: UpstreamTargetConfig[];
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
  /** Consecutive failures (connection error, head timeout, 429/500/502/503/529 without `retry-after`) that open a target's breaker. Default 3. */
  breakerThreshold: number;
  /** How long an open breaker keeps its target out, in ms; then one trial request decides. Default 30000. */
  breakerCooldownMs: number;
}

export interface GatewayConfig {
  /** Public base URL; when set, requests whose Host differs get 421. */
  baseUrl: string | null;
  upstream: UpstreamConfig;
  models: ModelConfig[];
  /** Alias -> canonical catalogue ID. */
  aliases: Record<string, string>;
  keys: KeyConfig[];
  /** The key groups, the basic group `default` first (see lib/config/key-groups.ts). */
  keyGroups: KeyGroupConfig[];
  /** Single sign-on and session settings (config `auth`). */
  auth: AuthConfig;
  /** Teams (config `teams[]`); the admin API adds more at run time. */
  teams: TeamConfig[];
  defaults: {
    /** Default `max_tokens` of translated requests that give none, for models without `capabilities`. Default 4096. */
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
    /**
     * Largest file upload (`POST /v1/files`) accepted, in bytes; an upload is held in memory while it is
     * sent upstream. Default 104857600 (100 MiB); at most 524288000 (500 MB, the upstream's limit).
     */
    fileBytes: number;
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
    /**
     * Uses held for a server tool offered without `max_uses`: web searches priced, and for every server tool
     * (web search, web fetch, code execution, tool search, each MCP server) sampling steps of input
     * (lib/billing/input-bound.ts). Default 10.
     */
    webSearchesPerRequest: number;
    /**
     * The smallest reply a request is let through with when its worst case does not fit the credit
     * left under the cap: its `max_tokens` is lowered to what the credit left pays, down to this;
     * below it, 402. Default 16.
     */
    minOutputTokens: number;
  };
  /** On SIGTERM: how long in-flight requests and streams may run before they are cut, in ms. Default 25000. */
  shutdownGraceMs: number;
  /**
   * On SIGTERM: how long the instance keeps accepting requests while `/health` answers 503 `draining`,
   * so a load balancer's health check takes it out before its listener closes, in ms (at most
   * `shutdownGraceMs`, which counts from the signal). Default 5000; 0 for hosts that stop routing to
   * an instance before they signal it.
   */
  shutdownDelayMs: number;
  /** The Responses route (`POST /v1/responses`, docs/responses.md). */
  responses: {
    /**
     * Native thinking budget (tokens) per `reasoning.effort` (and chat `reasoning_effort`), for models
     * whose thinking is budget-only; an effort not listed, `none` and `minimal` turn thinking off.
     * Default {low: 2048, medium: 8192, high: 16384, xhigh: 32768, max: 65536}.
     */
    thinkingBudgets: Record<string, number>;
    /** How long a stored response (`store: true`) is kept for `previous_response_id` and GET, in ms. Default 86400000 (24 h). */
    storeTtlMs: number;
    /**
     * Most bytes of stored responses (as JSON) one key may hold; a response that would pass it is not
     * stored (the reply still goes out). Default 67108864 (64 MiB). On Redis, the bytes stored in a window
     * of `storeTtlMs` from the key's first save count (a delete does not give them back early).
     */
    maxStoredBytesPerKey: number;
  };
  /** What to do while the store (Redis) cannot be reached (lib/store/guard.ts). */
  store: {
    /** Serve requests unmetered (logged at every request) instead of 503. Default false. */
    failOpen: boolean;
    /** Longest wait for one store call, in ms. Default 2000. */
    timeoutMs: number;
  };
  /** The request log (lib/observability/request-log.ts): one record per request that reached the upstream or whose key was refused, no content. */
  requestLog: {
    /** How long records are kept, in days. Default 30. */
    retentionDays: number;
    /** Most records the in-memory store keeps (oldest dropped first); unused with Redis. Default 100000. */
    maxMemoryRecords: number;
  };
  /** Budget alerts (lib/alerts/): webhooks when a key's monthly spend crosses a share of its credit cap. */
  alerts: {
    /** Where alerts are POSTed; null turns alerts off. Needs env ALERTS_WEBHOOK_SECRET. Default null. */
    webhookUrl: string | null;
    /** Thresholds of keys that set none, percent of the monthly credit cap. Default [50, 80, 100]. */
    thresholds: number[];
    /** Time allowed for one webhook call, in ms. Default 10000. */
    timeoutMs: number;
    /** First retry delay after a timeout or 5xx, in ms; doubles per attempt up to 5 minutes. Default 5000. */
    retryBaseDelayMs: number;
    /** How long an alert is retried before it is given up (logged), in ms. Default 3600000 (1 hour). */
    retryForMs: number;
    /** How often each instance looks for alerts due (others' retries, its own after a restart), in ms. Default 5000. */
    pollIntervalMs: number;
  };
  /** From env ALERTS_WEBHOOK_SECRET: the HMAC-SHA256 key of the `x-gateway-signature` header. */
  alertsWebhookSecret: string | null;
  /** The listening port. From env PORT, default 8080. */
  port: number;
  /** From env REDIS_URL; null means the in-memory store. */
  redisUrl: string | null;
  /** From env REDIS_PREFIX, default `gateway:`: prefix of every Redis key, so several deployments can share one server. */
  redisPrefix: string;
  /** From env REDIS_CLUSTER_NODES (comma-separated `redis[s]://` URLs of some nodes): a Redis Cluster instead of REDIS_URL; null: none. */
  redisClusterNodes: string[] | null;
  /** From env REDIS_TLS_CA: path of the PEM file of a private CA that signed the Redis servers' certificates; null: the system's CAs. */
  redisTlsCaFile: string | null;
  /** From env REDIS_CONNECT_TIMEOUT_MS, default 5000: longest wait to open a connection to a Redis server, ms. */
  redisConnectTimeoutMs: number;
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

/** The environment variables the configuration reads. */
export interface ConfigEnv {
  PORT?: string;
  UPSTREAM_URL?: string;
  UPSTREAM_API_KEY?: string;
  REDIS_URL?: string;
  REDIS_PREFIX?: string;
  REDIS_CLUSTER_NODES?: string;
  REDIS_TLS_CA?: string;
  REDIS_CONNECT_TIMEOUT_MS?: string;
  GATEWAY_STATE_FILE?: string;
  LOG_LEVEL?: string;
  METRICS_TOKEN?: string;
  ADMIN_TOKEN?: string;
  ALERTS_WEBHOOK_SECRET?: string;
  [name: string]: string | undefined;
}
