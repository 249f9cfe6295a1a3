/**
 * What each cloud accepts, in one table: per provider, the beta flags it accepts (`anthropic-beta`; a
 * cloud answers any other with a 400), the body fields it refuses (top level, and on tool
 * definitions), and the features it offers. The gateway removes what the chosen target refuses
 * (request-for-target.ts, named in `x-gateway-dropped-params`) and sends a request that needs a feature
 * only to targets offering it (target-choice.ts).
 *
 * Each row cites the provider's page; the beta lists were also checked against LiteLLM's per-provider
 * map (litellm/anthropic_beta_headers_config.json), which records what each cloud answered.
 */
import type { ProviderName } from './provider';

/** The features a request may need, as bits (a request's needs and a target's offer are masks). */
export const FEATURES = {
  /** The Files API (`/v1/files`) and `file_id` sources in messages. */
  files: 1 << 0,
  /** Message Batches (`/v1/messages/batches`). */
  batches: 1 << 1,
  /** `POST /v1/messages/count_tokens`. */
  count_tokens: 1 << 2,
  /** `cache_control.ttl: "1h"`. */
  cache_1h: 1 << 3,
  /** The server tool `web_search_*`. */
  web_search: 1 << 4,
  /** The server tool `web_fetch_*`. */
  web_fetch: 1 << 5,
  /** The server tool `code_execution_*`. */
  code_execution: 1 << 6,
  /** The MCP connector (`mcp_servers`, `mcp_tool_use` blocks). */
  mcp: 1 << 7,
} as const;
export type FeatureName = keyof typeof FEATURES;

/** Every feature: what the first-party API offers. */
export const ALL_FEATURES = Object.values(FEATURES).reduce((mask, bit) => mask | bit, 0);

/** The names of the features in `mask`, in FEATURES order. */
export function featureNames(mask: number): FeatureName[] {
  return (Object.keys(FEATURES) as FeatureName[]).filter((name) => (mask & FEATURES[name]) !== 0);
}

/** One provider's row. */
export interface ProviderCapabilities {
  /** The page the row follows. */
  source: string;
  /** Beta flags accepted; null: every flag (the first-party API judges them itself). */
  betas: ReadonlySet<string> | null;
  /** Top-level body fields refused. */
  refusedFields: readonly string[];
  /** Fields refused on a tool definition (`tools[]`). */
  refusedToolFields: readonly string[];
  /** FEATURES bits offered. */
  features: number;
}

const f = FEATURES;

/** The table. The first-party API needs no adapting: every beta, every field, every feature. */
export const CAPABILITIES: Readonly<Record<ProviderName, ProviderCapabilities>> = {
  anthropic: {
    source: 'https://docs.anthropic.com/en/api/messages',
    betas: null, refusedFields: [], refusedToolFields: [], features: ALL_FEATURES,
  },
  // https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html
  // (the `anthropic_beta` values InvokeModel takes) and https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock
  // (features: no Files API, no Message Batches on the Messages API (Bedrock batch inference is its own API),
  // no web search, web fetch or code execution, no MCP connector; count tokens through Bedrock's CountTokens;
  // the 1-hour cache on the models that list it). `eager_input_streaming` on a tool is refused.
  // `compact-2026-01-12`: https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-compaction.html
  // ("Include the beta header compact-2026-01-12 ... supported with InvokeModel").
  bedrock: {
    source: 'https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html',
    betas: new Set([
      'computer-use-2024-10-22', 'computer-use-2025-01-24', 'computer-use-2025-11-24', 'token-efficient-tools-2025-02-19',
      'interleaved-thinking-2025-05-14', 'output-128k-2025-02-19', 'dev-full-thinking-2025-05-14', 'context-1m-2025-08-07',
      'context-management-2025-06-27', 'effort-2025-11-24', 'tool-search-tool-2025-10-19', 'tool-examples-2025-10-29',
      'compact-2026-01-12', 'fine-grained-tool-streaming-2025-05-14',
    ]),
    refusedFields: [],
    refusedToolFields: ['eager_input_streaming'],
    features: f.count_tokens | f.cache_1h,
  },
  // https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude (and .../claude/use-claude):
  // web search is offered, not web fetch, code execution, Files, Batches on this endpoint or the MCP
  // connector; count tokens through `count-tokens:rawPredict`. `context-1m-2025-08-07` and
  // `computer-use-2024-10-22` are refused as headers ("Unexpected value(s) ... for the `anthropic-beta`
  // header": BerriAI/litellm#31607, #19984; spec/helpers/vertex-rules.ts). The request refuses `output_config`,
  // `context_management`, `mcp_servers`, `container` and `service_tier`.
  vertex: {
    source: 'https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude',
    betas: new Set([
      'computer-use-2025-01-24', 'computer-use-2025-11-24', 'interleaved-thinking-2025-05-14',
      'web-search-2025-03-05', 'tool-search-tool-2025-10-19', 'compact-2026-01-12',
    ]),
    refusedFields: ['output_config', 'context_management', 'mcp_servers', 'container', 'service_tier'],
    refusedToolFields: [],
    features: f.count_tokens | f.cache_1h | f.web_search,
  },
  // https://platform.claude.com/docs/en/build-with-claude/claude-in-microsoft-foundry: the Messages API
  // with the first-party betas but no Message Batches (the official client, @anthropic-ai/foundry-sdk,
  // deletes `messages.batches`) and no Models API; Files, web search and fetch, code execution, the
  // MCP connector and count tokens are offered.
  foundry: {
    source: 'https://platform.claude.com/docs/en/build-with-claude/claude-in-microsoft-foundry',
    betas: new Set([
      'advanced-tool-use-2025-11-20', 'code-execution-2025-05-22', 'code-execution-2025-08-25', 'computer-use-2025-01-24',
      'computer-use-2025-11-24', 'context-1m-2025-08-07', 'context-management-2025-06-27', 'effort-2025-11-24',
      'files-api-2025-04-14', 'interleaved-thinking-2025-05-14', 'mcp-client-2025-04-04', 'mcp-client-2025-11-20',
      'prompt-caching-scope-2026-01-05', 'skills-2025-10-02', 'structured-outputs-2025-11-13', 'web-fetch-2025-09-10',
      'web-search-2025-03-05', 'extended-cache-ttl-2025-04-11',
    ]),
    refusedFields: [],
    refusedToolFields: [],
    features: f.files | f.count_tokens | f.cache_1h | f.web_search | f.web_fetch | f.code_execution | f.mcp,
  },
};

/**
 * Beta flags that change what the reply holds (its blocks, or the objects it names): a request
 * carrying one needs the feature, and is not served with the flag dropped. Matched by prefix (the
 * flag's name without its date).
 */
export const FEATURE_BETAS: ReadonlyArray<readonly [prefix: string, feature: FeatureName]> = [
  ['files-api-', 'files'],
  ['code-execution-', 'code_execution'],
  ['web-fetch-', 'web_fetch'],
  ['mcp-client-', 'mcp'],
];
