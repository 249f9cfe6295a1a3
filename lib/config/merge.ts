/**
 * The configuration as the library builds it: the config file's object with the caller's overrides
 * merged in, and the check that every listed upstream target's credential is in the environment.
 */
import { checkTargetCredentials } from './upstream-targets';
import type { GatewayConfig } from './types';

const MERGED_OBJECTS = ['upstream', 'defaults', 'limits'];

/** The config file's object with `overrides` applied (see `GatewayOptions.config`). */
export function mergeConfigObjects(file: Record<string, unknown>, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...file };
  for (const [field, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const base = merged[field];
    const bothObjects = MERGED_OBJECTS.includes(field) && isPlainObject(base) && isPlainObject(value);
    merged[field] = bothObjects ? { ...base, ...value } : value;
  }
  return merged;
}

/** Whether `value` is a JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Check that the credential of every target listed in a `targets` form (top level and key groups) is
 * in `env`.
 * @throws ConfigError naming the target and its env variable
 */
export function checkUpstreamCredentials(config: GatewayConfig, env: Record<string, string | undefined>): void {
  checkTargetCredentials(config.upstream.targets, 'upstream.targets', env);
  config.keyGroups.forEach((group) => checkTargetCredentials(group.upstream.targets, `keyGroups "${group.id}" upstream.targets`, env));
}
