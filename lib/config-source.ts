/**
 * The current configuration, behind one indirection. A config is frozen and replaced whole: a reload
 * (SIGHUP) validates the new file completely before swapping it in, so a request sees either the old
 * or the new catalogue, never a mix, and requests in flight keep the entries they already resolved.
 */
import { createCatalogue, type Catalogue } from './catalogue';
import type { GatewayConfig } from './config';

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
const RESTART_FIELDS = ['port', 'redisUrl', 'redisClusterNodes', 'redisTlsCaFile', 'redisConnectTimeoutMs', 'baseUrl', 'limits', 'logLevel', 'metricsToken', 'requestLog', 'alerts', 'alertsWebhookSecret'] as const;

/** What differs between two configurations, by top-level field: `reloaded` applies now, `needsRestart` does not. */
export function describeConfigChange(previous: GatewayConfig, next: GatewayConfig): { reloaded: string[]; needsRestart: string[] } {
  const reloaded: string[] = [];
  const needsRestart: string[] = [];
  for (const field of Object.keys(next) as Array<keyof GatewayConfig>) {
    if (JSON.stringify(previous[field]) === JSON.stringify(next[field])) continue;
    ((RESTART_FIELDS as readonly string[]).includes(field) ? needsRestart : reloaded).push(field);
  }
  return { reloaded, needsRestart };
}
