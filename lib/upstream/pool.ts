/**
 * One upstream client per distinct upstream of the key groups, created on first use and kept across
 * config reloads (a reload that points a group elsewhere gets a new client; one that does not keeps
 * the warm keep-alive agent).
 */
import type { KeyGroupConfig } from '../key-groups';
import { createUpstreamClient, type UpstreamClient, type UpstreamFaultOptions } from './client';

export interface UpstreamPool {
  /** The client of a group's upstream. A native group without a URL uses the default client. */
  forGroup(group: KeyGroupConfig): UpstreamClient;
  /** Every client created so far, the default one first. */
  all(): UpstreamClient[];
  /** Destroy the agents of every client. */
  destroy(): void;
}

export interface UpstreamPoolOptions {
  /** The client of the top-level upstream (or the embedded simulated one). */
  defaultClient: UpstreamClient;
  /** URL the default client was created for (`upstream.url`), null for the simulated upstream. */
  defaultUrl: string | null;
  /**
   * Env variable of the default client's credential (`upstream.apiKeyEnv`): a group at the same URL
   * naming another one gets a client of its own, so its traffic goes out on its own account.
   * Default: any group at the default URL shares the default client.
   */
  defaultApiKeyEnv?: string;
  /** Idle limit, retries and credential rest of every client created here. Default: the client defaults. */
  faults?: UpstreamFaultOptions;
  /** Reads an upstream credential by env variable name. Default: `process.env`. */
  env?: Record<string, string | undefined>;
}

export function createUpstreamPool(options: UpstreamPoolOptions): UpstreamPool {
  const env = options.env ?? process.env;
  const clients = new Map<string, UpstreamClient>();
  const keyOf = (group: KeyGroupConfig) => {
    const { kind, url, apiKeyEnv, timeoutMs } = group.upstream;
    return JSON.stringify([kind, url, apiKeyEnv, timeoutMs]);
  };
  return {
    forGroup(group) {
      const { kind, url, apiKeyEnv, timeoutMs } = group.upstream;
      const sameCredential = options.defaultApiKeyEnv === undefined || apiKeyEnv === options.defaultApiKeyEnv;
      if (kind === 'native' && sameCredential && (url === null || (url === options.defaultUrl && timeoutMs === options.defaultClient.timeoutMs))) {
        return options.defaultClient;
      }
      const key = keyOf(group);
      let client = clients.get(key);
      if (!client) {
        client = createUpstreamClient({ url: url ?? options.defaultUrl ?? options.defaultClient.url.href, apiKey: env[apiKeyEnv], timeoutMs, auth: kind === 'native' ? 'x-api-key' : 'bearer', ...options.faults });
        clients.set(key, client);
      }
      return client;
    },
    all() {
      return [options.defaultClient, ...clients.values()];
    },
    destroy() {
      for (const client of clients.values()) client.agent.destroy();
    },
  };
}
