/**
 * One upstream client per distinct upstream of the key groups, created on first use and kept across
 * config reloads (a reload that changes a group's targets gets a new client; one that does not keeps
 * the warm keep-alive agents and the targets' health). A client no group uses after a reload is retired
 * (`retireUnused`): metrics and /health report only the clients in use.
 *
 * An upstream is identified by its targets (id, URL, credential env variables, weight, models) and
 * its head timeout, never by its URL alone: a group with its own credential on the top-level URL gets
 * a client of its own, and no group ever sends another's credential.
 */
import type { Agent } from 'node:http';
import type { KeyGroupConfig } from '../config/key-groups';
import type { UpstreamTargetConfig } from '../config/upstream-targets';
import { createUpstreamClient, type UpstreamClient, type UpstreamFaultOptions } from './client';
import { createProvider } from './providers';
import type { TargetStatus, UpstreamTargetOptions } from './target';

/** One client of the pool, named for metrics and /health. */
export interface PooledUpstream {
  /** `default` for the top-level upstream, else the id of the first key group that used the client. */
  name: string;
  client: UpstreamClient;
}

/** A key group's upstream as /health and the admin API show it. */
export interface KeyGroupUpstreamStatus {
  keyGroup: string;
  /** The pooled client's name (several groups may share one upstream). */
  upstream: string;
  targets: TargetStatus[];
}

export interface UpstreamPool {
  /** The client of a group's upstream. A native group on the top-level targets uses the default client. */
  forGroup(group: KeyGroupConfig): UpstreamClient;
  /** Every client created so far, the default one first. */
  all(): UpstreamClient[];
  /** Every client created so far with its name, the default one first. */
  entries(): PooledUpstream[];
  /** The targets' state of each group's upstream (creating the clients not used yet). */
  describe(groups: readonly KeyGroupConfig[]): KeyGroupUpstreamStatus[];
  /**
   * The distinct clients `groups` use, with their names, the default one first when a group uses it:
   * what metrics report, so a client a reload replaced adds nothing to a target's series.
   */
  inUse(groups: readonly KeyGroupConfig[]): PooledUpstream[];
  /**
   * Forget the clients `groups` no longer use (after a reload) and destroy their agents once their
   * last request in flight is done, so replaced clients neither pile up nor keep idle sockets open.
   */
  retireUnused(groups: readonly KeyGroupConfig[]): void;
  /** Destroy the agents of every client but the default one (its owner destroys it). */
  destroy(): void;
}

export interface UpstreamPoolOptions {
  /** The client of the top-level upstream (or the embedded simulated one). */
  defaultClient: UpstreamClient;
  /** The targets the default client was created for (`upstream.targets`); empty for the simulated upstream. */
  defaultTargets: readonly UpstreamTargetConfig[];
  /** Idle limit, retries, credential rest and breaker of every client created here. Default: the client defaults. */
  faults?: UpstreamFaultOptions;
  /** Reads an upstream credential by env variable name. Default: `process.env`. */
  env?: Record<string, string | undefined>;
}

/** The identity of a list of targets (what tells two upstreams apart). */
function identityOf(targets: readonly UpstreamTargetConfig[]): string {
  return JSON.stringify(targets.map((target) => [
    target.id, target.url, target.apiKeyEnvs, target.weight, target.models,
    target.provider, target.modelIds, target.region, target.projectId, target.priceMultiplier,
  ]));
}

/**
 * A configured target as the upstream client takes it: its credentials read from `env` and, on a
 * cloud, its provider (providers/index.ts: the cloud's module is loaded here, only for a cloud target).
 * A cloud target's `apiKeyEnv` value goes to its provider; it is also in `apiKeys` so that replies are
 * redacted of it (the client sends a cloud target's requests with the provider's headers only).
 */
export function targetOptionsOf(target: UpstreamTargetConfig, env: Record<string, string | undefined>): UpstreamTargetOptions {
  const apiKeys = target.apiKeyEnvs.map((name) => env[name] ?? '');
  return {
    id: target.id, url: target.url, weight: target.weight, models: target.models, apiKeys, priceMultiplier: target.priceMultiplier,
    ...(target.provider === 'anthropic' ? {} : {
      provider: createProvider({ provider: target.provider, region: target.region, projectId: target.projectId, apiKey: apiKeys[0] }),
      modelIds: target.modelIds,
    }),
  };
}

/** The pool of a gateway's upstream clients around its default (top-level) one. */
export function createUpstreamPool(options: UpstreamPoolOptions): UpstreamPool {
  const env = options.env ?? process.env;
  const defaultIdentity = identityOf(options.defaultTargets);
  const clients = new Map<string, PooledUpstream>();

  function forGroup(group: KeyGroupConfig): UpstreamClient {
    const { kind, targets, timeoutMs } = group.upstream;
    const identity = identityOf(targets);
    if (kind === 'native' && identity === defaultIdentity && timeoutMs === options.defaultClient.timeoutMs) return options.defaultClient;
    const key = JSON.stringify([kind, timeoutMs, identity]);
    let pooled = clients.get(key);
    if (!pooled) {
      const client = createUpstreamClient({
        targets: targets.map((target) => targetOptionsOf(target, env)),
        timeoutMs, auth: kind === 'native' ? 'x-api-key' : 'bearer', ...options.faults,
      });
      pooled = { name: group.id, client };
      clients.set(key, pooled);
    }
    return pooled.client;
  }

  const entries = () => [{ name: 'default', client: options.defaultClient }, ...clients.values()];
  const inUse = (groups: readonly KeyGroupConfig[]): PooledUpstream[] => {
    const used = new Set(groups.map(forGroup));
    return entries().filter((entry) => used.has(entry.client));
  };
  return {
    forGroup,
    all: () => entries().map((entry) => entry.client),
    entries,
    describe(groups) {
      return groups.map((group) => {
        const client = forGroup(group);
        const upstream = entries().find((entry) => entry.client === client)!.name;
        return { keyGroup: group.id, upstream, targets: client.describeTargets() };
      });
    },
    inUse,
    retireUnused(groups) {
      const used = new Set(groups.map(forGroup));
      for (const [key, { client }] of clients) {
        if (used.has(client)) continue;
        clients.delete(key);
        for (const target of client.targets) destroyWhenIdle(target.agent);
      }
    },
    destroy() {
      for (const { client } of clients.values()) for (const target of client.targets) target.agent.destroy();
    },
  };
}

/**
 * Destroy an agent now if no request uses one of its sockets, else once the last one is handed back
 * (the agent's `free` event); a request in flight on a retired client finishes undisturbed.
 */
function destroyWhenIdle(agent: Agent): void {
  const busy = () => Object.values(agent.sockets).some((sockets) => (sockets?.length ?? 0) > 0) || Object.keys(agent.requests).length > 0;
  if (!busy()) return agent.destroy();
  const check = () => {
    // 'free' fires before the socket leaves `agent.sockets`: look once the agent has moved it.
    setImmediate(() => {
      if (busy()) return;
      agent.off('free', check);
      agent.destroy();
    });
  };
  agent.on('free', check);
}
