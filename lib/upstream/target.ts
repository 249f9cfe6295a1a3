/**
 * One upstream target as the client holds it: its URL and keep-alive agent, its credentials in turn
 * with their retry policy, its health (target-health.ts) and its counters (Prometheus reads them).
 */
import http from 'node:http';
import https from 'node:https';
import net, { type Socket } from 'node:net';
import { trackConnecting } from './attempt';
import { createCredentialRotation, type CredentialRotation } from './credentials';
import { CAPABILITIES, type ProviderCapabilities } from './providers/capabilities';
import type { TargetProvider } from './providers/provider';
import { createRetryPolicy, type RetryPolicyOptions } from './retry-policy';
import { TargetHealth, type TargetHealthOptions, type TargetHealthView } from './target-health';

/** What a target is configured with (see lib/config/upstream-targets.ts for the config form). */
export interface UpstreamTargetOptions {
  /** Names the target in logs and metrics. Default `default`. */
  id?: string;
  /** Base URL, e.g. `https://upstream.example` (a path is kept as a prefix). */
  url: string;
  /** Credentials used in turn; empty or absent sends none (the simulated upstream needs none). */
  apiKeys?: string[];
  /** Share of the requests spread by weight. Default 1. */
  weight?: number;
  /** Catalogue IDs served; absent or null: every model. */
  models?: readonly string[] | null;
  /** The cloud the target is on (providers/index.ts, `createProvider`). Absent: the first-party API. */
  provider?: TargetProvider;
  /** Catalogue ID -> this target's model ID (a cloud target's `modelIds`). */
  modelIds?: Readonly<Record<string, string>> | null;
  /** Credits of a reply this target serves = its priced usage x this. Default 1. */
  priceMultiplier?: number;
}

/** What an attempt's builder reads of the target it goes to. */
export interface UpstreamTarget {
  readonly id: string;
  /** Position in the client's list. */
  readonly index: number;
  readonly url: URL;
  /** `url.pathname` without its trailing slashes: the prefix of every upstream path. */
  readonly basePath: string;
  readonly agent: http.Agent;
  readonly transport: typeof http | typeof https;
  /** The cloud's adapter; undefined for the first-party API (whose requests go as they are). */
  readonly provider: TargetProvider | undefined;
  /** Catalogue ID -> this target's model ID; null for the first-party API. */
  readonly modelIds: Readonly<Record<string, string>> | null;
  /** What the target accepts (providers/capabilities.ts, its provider's row). */
  readonly capabilities: ProviderCapabilities;
  /** Credits of a reply it serves = priced usage x this (1 unless configured). */
  readonly priceMultiplier: number;
}

/** Counters of one target since start, by this instance. */
export interface TargetCounters {
  /** Attempts sent to it. */
  requests: number;
  /** Attempts that failed (connection error, head timeout, 429/500/502/503/529). */
  failures: number;
  /** Requests moved from it to another target after a failure. */
  failovers: number;
}

/** A target with what the client keeps for it. */
export interface HeldTarget extends UpstreamTarget {
  readonly weight: number;
  /** The served models; null: every model. */
  readonly models: ReadonlySet<string> | null;
  readonly credentials: CredentialRotation;
  readonly planRetry: ReturnType<typeof createRetryPolicy>;
  readonly health: TargetHealth;
  readonly counters: TargetCounters;
  /** Smooth weighted round-robin's running weight (target-choice.ts). */
  current: number;
}

/** A target's state as /health and the admin API show it. */
export interface TargetStatus extends TargetHealthView, TargetCounters {
  id: string;
  /** The cloud it is on: `anthropic` (the first-party API), `bedrock`, `vertex` or `foundry`. */
  provider: string;
  weight: number;
  models: string[] | null;
}

export interface HeldTargetSettings extends RetryPolicyOptions, TargetHealthOptions {
  auth: 'x-api-key' | 'bearer';
  maxSockets?: number;
}

/**
 * How long a kept-alive socket may sit idle in a target's agent before it is closed, in ms (the
 * agent's `timeout`, https://nodejs.org/api/http.html#new-agentoptions; a reply's `keep-alive:
 * timeout=N` shortens it to N-1 s). Below the shortest idle close of common upstream servers (Node's
 * `server.keepAliveTimeout`, 5 s), so the gateway closes an idle socket before the upstream does and
 * rarely sends a request onto one the upstream has just closed (retry-policy.ts, isIdleSocketReset).
 */
export const KEEP_ALIVE_IDLE_MS = 4000;

/**
 * The keep-alive agent of a target at `url` (http or https by its protocol): idle sockets closed after
 * {@link KEEP_ALIVE_IDLE_MS}, at most `maxSockets` at once (default unbounded). The stream writer's
 * tests hold a reply on one (spec/unit/stream-writer.spec.ts).
 */
export function createTargetAgent(url: URL, maxSockets = Infinity): http.Agent {
  const agentOptions = { keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, maxSockets, maxFreeSockets: 256 };
  if (url.protocol === 'https:') return new https.Agent(agentOptions);
  return Object.assign(new http.Agent(agentOptions), { createConnection: connectReadingOnDemand });
}

/**
 * Every plain upstream socket reads into this one buffer, and each read is copied out before the
 * callback returns (one JS thread, and libuv reads a socket straight into its callback), so no socket
 * holds a read buffer of its own. 32 KiB: a stalled reader holds at most one read beside Node's 16 KiB
 * write buffer (48 KiB, under the 64 KiB a held stream may cost), and the bench's replies (up to 25 KB)
 * still come in one read, as with Node's 64 KiB reads (16 KiB reads cost a second read, parse and
 * client write per 200-delta stream).
 */
const UPSTREAM_READ = Buffer.allocUnsafe(32 * 1024);

/**
 * A plain upstream socket (the http agent's `createConnection`, net.createConnection's arguments) that
 * reads only while its reader wants more: with `onread`, `socket.pause()` stops reading at once
 * (https://nodejs.org/api/net.html#socketconnectoptions-connectlistener, `onread`; without it a paused
 * socket still takes one more 64 KiB read), and a readable high-water mark of 0 keeps a paused socket
 * and its reply from reading ahead to fill their buffers. A stalled reader then holds only the refused write and the rest
 * of one 32 KiB read (lib/http/sse.ts, createStreamWriter). TLS sockets read 16 KiB records already;
 * `onread` does not reach through tls.connect, so https targets keep Node's own reading.
 */
function connectReadingOnDemand(options: net.NetConnectOpts, connectListener?: () => void): Socket {
  // readableHighWaterMark: the stream.Duplex option net.Socket passes on (its typings omit it); the
  // reply (IncomingMessage) takes its socket's, so it too asks for no more than it gives out.
  const readOnDemand: net.NetConnectOpts & { readableHighWaterMark: number } = {
    ...options,
    readableHighWaterMark: 0,
    onread: { buffer: UPSTREAM_READ, callback: (bytes, buffer) => socket.push(Buffer.from(buffer.subarray(0, bytes))) },
  };
  const socket: Socket = net.createConnection(readOnDemand, connectListener);
  return socket;
}

/**
 * Create the target at `index` of a client: its keep-alive agent (http or https by its URL), its
 * credential rotation and retry policy, a healthy state and zero counters.
 * @throws TypeError when `options.url` is not a URL
 */
export function createHeldTarget(options: UpstreamTargetOptions, index: number, settings: HeldTargetSettings): HeldTarget {
  const url = new URL(options.url);
  const secure = url.protocol === 'https:';
  const credentials = createCredentialRotation(options.apiKeys ?? [], settings.auth, settings.now);
  return {
    id: options.id ?? 'default',
    index,
    url,
    basePath: url.pathname.replace(/\/+$/, ''),
    agent: trackAgentConnections(createTargetAgent(url, settings.maxSockets)),
    transport: secure ? https : http,
    provider: options.provider,
    modelIds: options.modelIds ?? null,
    capabilities: CAPABILITIES[options.provider?.name ?? 'anthropic'],
    priceMultiplier: options.priceMultiplier ?? 1,
    weight: options.weight ?? 1,
    models: options.models ? new Set(options.models) : null,
    credentials,
    planRetry: createRetryPolicy(settings, credentials),
    health: new TargetHealth(settings),
    counters: { requests: 0, failures: 0, failovers: 0 },
    current: 0,
  };
}

/**
 * `agent`, whose every new socket is followed until it connects (attempt.ts, `trackConnecting`): an
 * attempt that fails before then never sent its request, and may go to another target.
 */
function trackAgentConnections<A extends http.Agent>(agent: A): A {
  const createConnection = (agent as unknown as { createConnection: (...args: unknown[]) => Socket | undefined }).createConnection;
  Object.assign(agent, {
    createConnection(this: A, ...args: unknown[]) {
      const socket = createConnection.apply(this, args);
      if (socket) trackConnecting(socket);
      return socket;
    },
  });
  return agent;
}

/** The status of `target` at `now` (epoch ms). */
export function describeTarget(target: HeldTarget, now: number): TargetStatus {
  return {
    id: target.id, provider: target.provider?.name ?? 'anthropic', weight: target.weight, models: target.models ? [...target.models] : null,
    ...target.health.view(now), ...target.counters,
  };
}
