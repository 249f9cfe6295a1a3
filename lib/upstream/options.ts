/**
 * The upstream client's options: where requests go (targets, or one URL and its credentials), how the
 * credential is sent, and the fault settings with their defaults (config `upstream.*`, keyGroups[].upstream).
 */
import type { UpstreamTargetOptions } from './target';
import { TARGET_HEALTH_DEFAULTS } from './target-health';

/** The defaults of the upstream fault settings (config `upstream.*`, keyGroups[].upstream). */
export const UPSTREAM_DEFAULTS = {
  /** Longest gap between two chunks of a reply body, ms. */
  streamIdleTimeoutMs: 120_000,
  /** Retries before the first byte went to the client. */
  maxRetries: 2,
  /** First backoff delay, ms (doubled per retry, capped at 8000). */
  retryBaseDelayMs: 500,
  /** Longest `retry-after` waited for, ms. */
  maxRetryAfterMs: 20_000,
  /** How long a credential that got a 401 or 429 rests, ms. */
  credentialRestMs: 60_000,
  /** Consecutive failures of a target that open its breaker. */
  breakerThreshold: TARGET_HEALTH_DEFAULTS.breakerThreshold,
  /** How long an open breaker keeps its target out before one trial request, ms. */
  breakerCooldownMs: TARGET_HEALTH_DEFAULTS.breakerCooldownMs,
} as const;

export interface UpstreamOptions {
  /** The targets requests are spread over (at most 16). Absent: the one target of `url` and `apiKey(s)`. */
  targets?: UpstreamTargetOptions[];
  /** Base URL, e.g. `https://upstream.example` (a path is kept as a prefix); the single-target form. */
  url?: string;
  /** One credential (same as `apiKeys: [apiKey]`); the single-target form. */
  apiKey?: string;
  /** Credentials used in turn; empty or absent sends none (the simulated upstream needs none); the single-target form. */
  apiKeys?: string[];
  /** How the credential is sent: `x-api-key` (native upstreams, the default) or `bearer` (chat-completions upstreams). */
  auth?: 'x-api-key' | 'bearer';
  /** Time allowed for the reply head, per attempt, in ms. */
  timeoutMs: number;
  /** See UPSTREAM_DEFAULTS for these seven. */
  streamIdleTimeoutMs?: number;
  maxRetries?: number;
  retryBaseDelayMs?: number;
  maxRetryAfterMs?: number;
  credentialRestMs?: number;
  breakerThreshold?: number;
  breakerCooldownMs?: number;
  /**
   * Max sockets open to each target at once. Default: no cap. Every open stream holds one socket for
   * as long as the reply runs (minutes), so a cap makes request cap+1 wait behind streams, not load.
   */
  maxSockets?: number;
  /** Clock (epoch ms) and random source in [0, 1), for tests. */
  now?: () => number;
  random?: () => number;
}

/** The fault-handling settings of a client, as config.json names them. */
export type UpstreamFaultOptions = Pick<UpstreamOptions, keyof typeof UPSTREAM_DEFAULTS>;

/** The fault-handling settings of a resolved `upstream` config section. */
export function faultOptionsOf(upstream: Required<UpstreamFaultOptions>): UpstreamFaultOptions {
  const { streamIdleTimeoutMs, maxRetries, retryBaseDelayMs, maxRetryAfterMs, credentialRestMs, breakerThreshold, breakerCooldownMs } = upstream;
  return { streamIdleTimeoutMs, maxRetries, retryBaseDelayMs, maxRetryAfterMs, credentialRestMs, breakerThreshold, breakerCooldownMs };
}
