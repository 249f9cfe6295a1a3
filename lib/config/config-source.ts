/**
 * The current configuration, behind one indirection. A config is frozen and replaced whole: a reload
 * (SIGHUP) validates the new file completely before swapping it in, so a request sees either the old
 * or the new catalogue, never a mix, and requests in flight keep the entries they already resolved.
 */
import { createCatalogue, type Catalogue } from './catalogue';
import type { GatewayConfig } from '.';

export interface ConfigSource {
  /** The configuration in force. */
  readonly config: GatewayConfig;
  /** The catalogue of `config`. */
  readonly catalogue: Catalogue;
  /** Swap in a validated configuration; listeners run after the swap. */
  replace(next: GatewayConfig): void;
  /** Run `listener(next, previous)` after each replacement. */
  onReplace(listener: (next: GatewayConfig, previous: GatewayConfig) => void): void;
}

export function createConfigSource(initial: GatewayConfig): ConfigSource {
  let state = { config: initial, catalogue: createCatalogue(initial) };
  const listeners: Array<(next: GatewayConfig, previous: GatewayConfig) => void> = [];
  return {
    get config() {
      return state.config;
    },
    get catalogue() {
      return state.catalogue;
    },
    replace(next) {
      const previous = state.config;
      state = { config: next, catalogue: createCatalogue(next) };
      for (const listener of listeners) listener(next, previous);
    },
    onReplace(listener) {
      listeners.push(listener);
    },
  };
}

/** Fields read once at start-up: a reload that changes them logs that a restart is needed. */
const RESTART_FIELDS: ReadonlySet<string> = new Set([
  'port', 'redisUrl', 'redisPrefix', 'redisClusterNodes', 'redisTlsCaFile', 'redisConnectTimeoutMs', 'stateFile', 'baseUrl', 'logLevel',
  'metricsToken', 'adminToken', 'requestLog', 'alerts', 'alertsWebhookSecret',
  // The store guard is built at start; so is sign-in (its provider and cookies).
  'store', 'auth',
]);

/**
 * Fields of an object read at start-up while its other fields apply on reload: the upstream clients'
 * retry, idle and breaker settings are fixed when the clients are built (a reload that changes the
 * targets gets new clients, still with the start's settings); the body limits are the JSON body
 * step's, built once (`limits.fileBytes` is read per upload).
 */
const RESTART_SUBFIELDS: Readonly<Record<string, ReadonlySet<string>>> = {
  upstream: new Set(['streamIdleTimeoutMs', 'maxRetries', 'retryBaseDelayMs', 'maxRetryAfterMs', 'credentialRestMs', 'breakerThreshold', 'breakerCooldownMs']),
  limits: new Set(['bodyBytes', 'bodyTimeoutMs', 'bodyMinBytesPerSecond']),
};

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * What differs between two configurations: `reloaded` names the top-level fields that apply now,
 * `needsRestart` the fields (`upstream.maxRetries` for a field of an object) that are read at start
 * only, so a reload that changes them logs that a restart is needed.
 */
export function describeConfigChange(previous: GatewayConfig, next: GatewayConfig): { reloaded: string[]; needsRestart: string[] } {
  const reloaded: string[] = [];
  const needsRestart: string[] = [];
  for (const field of Object.keys(next) as Array<keyof GatewayConfig>) {
    if (same(previous[field], next[field])) continue;
    const subfields = RESTART_SUBFIELDS[field];
    if (!subfields) {
      (RESTART_FIELDS.has(field) ? needsRestart : reloaded).push(field);
      continue;
    }
    const before = previous[field] as unknown as Record<string, unknown>;
    const after = next[field] as unknown as Record<string, unknown>;
    const changed = Object.keys({ ...before, ...after }).filter((name) => !same(before[name], after[name]));
    needsRestart.push(...changed.filter((name) => subfields.has(name)).map((name) => `${field}.${name}`));
    if (changed.some((name) => !subfields.has(name))) reloaded.push(field);
  }
  return { reloaded, needsRestart };
}
