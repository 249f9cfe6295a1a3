/**
 * A disposable Redis Cluster for tests: `redis-server` processes in cluster mode on free loopback ports,
 * in a temporary directory, joined with `redis-cli --cluster create`, stopped (SIGKILL) and removed by
 * `stop()` — and killed and removed at the test process's exit should `stop()` never run
 * (spec/helpers/redis-process.ts, spec/helpers/temp-dir.ts).
 * It never touches a Redis on the default port 6379, nor the run's own Redis (spec/setup.ts).
 *
 * Timings on the development machine (redis-server 7.0.15, 2 cores, 6 nodes: 3 primaries, 1 replica each):
 * - `startRedisCluster()`: 2.5–3 s, up to 5 s when the machine is busy. The floor is Redis's: nodes up
 *   ~0.4 s, `redis-cli --cluster create` ~1.1 s (it sleeps a second before checking that the nodes
 *   agree), then a primary turns `cluster_state:ok` only a node timeout after it last saw itself in a
 *   minority (before the create every node does) and no sooner than 2 s after it started.
 * - `killPrimary()` + `waitForFailover()`: about 2.8 s with the default node timeout of 1000 ms (2.2 s at
 *   500 ms: the failure must be seen, agreed on by most primaries, and a replica elected after 0.5–1 s).
 * - `restartNode()` of a killed primary, back as a replica of its successor: about 0.6 s.
 *
 * Needs `redis-server` (Debian `redis-server`) and `redis-cli` (Debian `redis-tools`); without either,
 * `startRedisCluster` throws at once with one line naming the package.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { freePort } from './ports';
import { tempDir } from './temp-dir';
import { requireCommand, sleep, startRedisServer, type RedisServerProcess } from './redis-process';

const execFileAsync = promisify(execFile);

/** The number of hash slots of a Redis Cluster. */
export const CLUSTER_SLOTS = 16384;

/** CRC16/XMODEM (polynomial 0x1021, initial value 0), the checksum Redis Cluster hashes keys with. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * The hash slot of `key`, as Redis Cluster computes it (`CLUSTER KEYSLOT`): CRC16 of the key's UTF-8
 * bytes modulo 16384, or of its hash tag alone — what lies between the first `{` and the first `}` after
 * it, when that is not empty (`{user:1}:spend` and `{user:1}:keys` share a slot; `{}x` hashes whole).
 * @returns an integer in [0, 16383]
 */
export function keySlot(key: string | Buffer): number {
  let bytes: Buffer = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  const open = bytes.indexOf(0x7b); // {
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1); // }
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) % CLUSTER_SLOTS;
}

/** One node of the cluster, as the cluster sees it when asked (`CLUSTER NODES`). */
export interface ClusterNode {
  /** Its client port on 127.0.0.1. */
  port: number;
  /** Its cluster bus port (`--cluster-port`), also on 127.0.0.1. */
  busPort: number;
  /** `redis://127.0.0.1:<port>`. */
  url: string;
  /** Its 40-character node ID. */
  id: string;
  /** Whether it serves slots (`primary`) or replicates one that does (`replica`). */
  role: 'primary' | 'replica';
  /** For a replica: the client port of its primary. */
  primaryPort?: number;
  /** For a primary: the slot ranges it serves, inclusive `[first, last]`, ascending. */
  slots: Array<[number, number]>;
  /** Whether its process is running (false after `killPrimary`/`killNode`, until `restartNode`). */
  alive: boolean;
}

/** What `startRedisCluster` takes. */
export interface RedisClusterOptions {
  /** Primaries, each serving an equal share of the 16384 slots (default 3; `redis-cli` needs at least 3). */
  primaries?: number;
  /** Replicas of each primary (default 1; with 0 there is no failover: `waitForFailover` times out). */
  replicasPerPrimary?: number;
  /**
   * `cluster-node-timeout` in milliseconds (default 1000): how long a node may not answer before it is
   * deemed failing, so about how long a failover takes to start. Much lower makes a busy machine see
   * failures that did not happen.
   */
  nodeTimeoutMs?: number;
  /** Overall time allowed for the start, for `waitForFailover` and for `restartNode` (default 20 s). */
  timeoutMs?: number;
}

/** A running cluster; see {@link startRedisCluster}. */
export interface RedisCluster {
  /**
   * The nodes as they were once the cluster was formed (first the primaries, then the replicas),
   * `alive` kept up to date; `role`, `primaryPort` and `slots` are not (after a failover ask `topology()`).
   */
  readonly nodes: readonly ClusterNode[];
  /** `redis://127.0.0.1:<port>` of every node, for `REDIS_CLUSTER_NODES` or `createCluster({ rootNodes })`. */
  readonly urls: readonly string[];
  /** The temporary directory holding each node's `nodes-<port>.conf` (removed by `stop()`). */
  readonly dir: string;
  /**
   * The nodes as the cluster sees them now, asked of a running node.
   * @throws Error when no running node answers
   */
  topology(): Promise<ClusterNode[]>;
  /**
   * The running primary serving `slot` now.
   * @throws RangeError for a slot outside [0, 16383]; Error when no running primary serves it (say,
   *   between `killPrimary` and the failover)
   */
  primaryForSlot(slot: number): Promise<ClusterNode>;
  /** `primaryForSlot(keySlot(key))`. */
  primaryForKey(key: string): Promise<ClusterNode>;
  /**
   * Kill (SIGKILL) the primary on `port`, as a crash would, and wait until its process has exited.
   * @returns the slot ranges it served
   * @throws Error when `port` is not a node of this cluster, not running, or not a primary now
   */
  killPrimary(port: number): Promise<Array<[number, number]>>;
  /**
   * Wait until `slot` is served by a running primary again (a replica was promoted) and every running
   * node reports `cluster_state:ok`.
   * @returns the new primary
   * @throws Error after `timeoutMs` (default: the cluster's `timeoutMs`) with every running node's last
   *   `CLUSTER INFO` and the last `CLUSTER NODES` seen
   */
  waitForFailover(slot: number, timeoutMs?: number): Promise<ClusterNode>;
  /**
   * Start the stopped node on `port` again with its old `nodes-<port>.conf` (a killed primary comes back
   * as a replica of the node that took over its slots) and wait until the whole cluster is healthy again:
   * all nodes known and not failing, all slots served, every replica's link to its primary up.
   * @throws Error when `port` is not a node of this cluster or is running; after the timeout as `waitForFailover`
   */
  restartNode(port: number): Promise<ClusterNode>;
  /** Kill every node (SIGKILL) and remove the temporary directory. Safe to call twice. */
  stop(): Promise<void>;
}

interface NodeProcess {
  port: number;
  busPort: number;
  args: string[];
  server?: RedisServerProcess;
}

/** Send one command to the node on `port` over a short-lived connection (no reconnection, 1 s to connect). */
async function ask(port: number, args: string[]): Promise<string> {
  const client = createClient({ socket: { host: '127.0.0.1', port, connectTimeout: 1000, reconnectStrategy: false } });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const reply = await client.sendCommand(args);
    return typeof reply === 'string' ? reply : String(reply);
  } finally {
    client.destroy();
  }
}

/** `field:value` lines (`CLUSTER INFO`, `INFO replication`) as a map. */
function parseInfo(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  return fields;
}

interface NodesLine {
  id: string;
  port: number;
  busPort: number;
  flags: string[];
  primaryId: string | null;
  linkState: string;
  slots: Array<[number, number]>;
}

/** `CLUSTER NODES` output, one entry a node (slots being imported or migrated, `[...]`, left out). */
function parseClusterNodes(text: string): NodesLine[] {
  return text.trim().split(/\r?\n/).filter(Boolean).map((line) => {
    const [id, address, flags, primary, , , , linkState, ...slotFields] = line.split(' ');
    const match = /:(\d+)@(\d+)/.exec(address);
    return {
      id,
      port: match ? Number(match[1]) : 0,
      busPort: match ? Number(match[2]) : 0,
      flags: flags.split(','),
      primaryId: primary === '-' ? null : primary,
      linkState,
      slots: slotFields.filter((field) => !field.startsWith('[')).map((field) => {
        const [first, last] = field.split('-').map(Number);
        return [first, last ?? first] as [number, number];
      }),
    };
  });
}

/**
 * Start a Redis Cluster of `primaries` primaries with `replicasPerPrimary` replicas each (default 3 and 1:
 * 6 nodes), on free loopback ports, without persistence, and wait until it is healthy: every node reports
 * `cluster_state:ok` with all 16384 slots assigned and served, every node knows every other (none failing
 * or in handshake) and agrees on who is primary, and every replica's link to its primary is up.
 *
 * Each node: `redis-server --port N --cluster-port B --cluster-enabled yes --cluster-config-file
 * nodes-N.conf --cluster-node-timeout 1000 --save '' --appendonly no --bind 127.0.0.1`, plus
 * `--repl-diskless-sync-delay 0` (a replica's first sync does not wait 5 s) and
 * `--cluster-replica-validity-factor 0` (a replica may always take over). The bus port is a free port
 * of its own rather than N + 10000 (which may be above 65535 or taken).
 *
 * 2.5–3 s on the development machine (see the module's docstring for why not less).
 * @throws Error naming the Debian package when `redis-server` or `redis-cli` is missing; Error with the
 *   failing node's log or `redis-cli`'s output when a node or the create fails; Error with every node's
 *   last `CLUSTER INFO` when the cluster is not healthy within `timeoutMs`. Whatever was started is
 *   killed and the directory removed before any of these is thrown.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  requireCommand('redis-server', 'the Redis cluster tests');
  requireCommand('redis-cli', 'the Redis cluster tests');
  const primaries = options.primaries ?? 3;
  const replicasPerPrimary = options.replicasPerPrimary ?? 1;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1000;
  const timeoutMs = options.timeoutMs ?? 20_000;
  if (!Number.isInteger(primaries) || primaries < 3) throw new RangeError(`a cluster needs at least 3 primaries, not ${primaries}`);
  if (!Number.isInteger(replicasPerPrimary) || replicasPerPrimary < 0) throw new RangeError(`replicasPerPrimary: ${replicasPerPrimary}`);
  const count = primaries * (1 + replicasPerPrimary);

  const dir = tempDir('gateway-test-redis-cluster-');
  const procs: NodeProcess[] = [];
  const used = new Set<number>();
  const pickPort = async (): Promise<number> => {
    for (;;) {
      const port = await freePort();
      if (!used.has(port)) {
        used.add(port);
        return port;
      }
    }
  };
  for (let i = 0; i < count; i++) {
    const port = await pickPort();
    const busPort = await pickPort();
    procs.push({
      port,
      busPort,
      args: [
        '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
        '--cluster-enabled', 'yes', '--cluster-port', String(busPort),
        '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(nodeTimeoutMs),
        '--cluster-replica-validity-factor', '0', '--repl-diskless-sync-delay', '0',
        '--save', '', '--appendonly', 'no',
      ],
    });
  }

  let stopped = false;
  const stop = async (): Promise<void> => {
    stopped = true;
    await Promise.all(procs.map((proc) => proc.server?.kill('SIGKILL')));
    fs.rmSync(dir, { recursive: true, force: true });
  };

  const byPort = (port: number): NodeProcess | undefined => procs.find((proc) => proc.port === port);
  const isAlive = (proc: NodeProcess): boolean => proc.server?.running === true;

  /** The first `CLUSTER NODES` a running node gives, as ClusterNodes. */
  const topology = async (): Promise<ClusterNode[]> => {
    let lastError: unknown;
    for (const proc of procs.filter(isAlive)) {
      try {
        return toClusterNodes(parseClusterNodes(await ask(proc.port, ['CLUSTER', 'NODES'])));
      } catch (err) {
        lastError = err;
      }
    }
    throw new Error(`no running node of the cluster answered CLUSTER NODES: ${String(lastError)}`);
  };
  const toClusterNodes = (lines: NodesLine[]): ClusterNode[] => {
    const portOf = new Map(lines.map((line) => [line.id, line.port]));
    return lines.map((line) => ({
      port: line.port,
      busPort: line.busPort,
      url: `redis://127.0.0.1:${line.port}`,
      id: line.id,
      role: line.flags.includes('master') ? 'primary' as const : 'replica' as const,
      ...(line.primaryId ? { primaryPort: portOf.get(line.primaryId) } : {}),
      slots: line.slots,
      alive: byPort(line.port) ? isAlive(byPort(line.port)!) : false,
    }));
  };

  /**
   * Poll every running node until `healthy` holds for what they report, or time out.
   * `healthy` gets each running node's `CLUSTER INFO` and `CLUSTER NODES`, and returns null when
   * satisfied or what is still missing.
   */
  const waitUntil = async (
    what: string,
    healthy: (reports: Array<{ port: number; info: Map<string, string>; nodes: NodesLine[] }>) => Promise<string | null>,
    limitMs: number,
  ): Promise<void> => {
    const deadline = Date.now() + limitMs;
    let last = '';
    let lastInfo: string[] = [];
    for (;;) {
      if (stopped) throw new Error(`the cluster was stopped while waiting for ${what}`);
      try {
        const reports = await Promise.all(procs.filter(isAlive).map(async (proc) => {
          const infoText = await ask(proc.port, ['CLUSTER', 'INFO']);
          const nodesText = await ask(proc.port, ['CLUSTER', 'NODES']);
          return { port: proc.port, infoText, info: parseInfo(infoText), nodesText, nodes: parseClusterNodes(nodesText) };
        }));
        lastInfo = reports.map((report) => `--- 127.0.0.1:${report.port} CLUSTER INFO\n${report.infoText.trim()}\n--- CLUSTER NODES\n${report.nodesText.trim()}`);
        const missing = await healthy(reports);
        if (missing === null) return;
        last = missing;
      } catch (err) {
        last = `a node did not answer: ${String(err)}`;
      }
      if (Date.now() >= deadline) {
        throw new Error(`Redis cluster: no ${what} within ${limitMs} ms (last: ${last})\n${lastInfo.join('\n')}`);
      }
      await sleep(50);
    }
  };

  /** The whole cluster healthy: see startRedisCluster's docstring. */
  const clusterHealthy = async (
    reports: Array<{ port: number; info: Map<string, string>; nodes: NodesLine[] }>,
  ): Promise<string | null> => {
    const expectedSlots = String(CLUSTER_SLOTS);
    for (const { port, info, nodes } of reports) {
      if (info.get('cluster_state') !== 'ok') return `127.0.0.1:${port} cluster_state:${info.get('cluster_state')}`;
      if (info.get('cluster_slots_assigned') !== expectedSlots || info.get('cluster_slots_ok') !== expectedSlots) {
        return `127.0.0.1:${port} has ${info.get('cluster_slots_ok')} of ${expectedSlots} slots ok`;
      }
      if (nodes.length !== count) return `127.0.0.1:${port} knows ${nodes.length} of ${count} nodes`;
      const unwell = nodes.find((node) => node.flags.some((flag) => ['fail', 'fail?', 'handshake', 'noaddr'].includes(flag)) || node.linkState !== 'connected');
      if (unwell) return `127.0.0.1:${port} sees 127.0.0.1:${unwell.port} as ${unwell.flags.join(',')} ${unwell.linkState}`;
      const servingPrimaries = nodes.filter((node) => node.flags.includes('master') && node.slots.length > 0);
      if (servingPrimaries.length !== primaries) return `127.0.0.1:${port} sees ${servingPrimaries.length} primaries serving slots`;
      const replicas = nodes.filter((node) => node.flags.includes('slave'));
      if (replicas.length !== primaries * replicasPerPrimary) return `127.0.0.1:${port} sees ${replicas.length} replicas`;
      for (const primary of servingPrimaries) {
        const own = replicas.filter((replica) => replica.primaryId === primary.id).length;
        if (own !== replicasPerPrimary) return `127.0.0.1:${port} sees 127.0.0.1:${primary.port} with ${own} replicas`;
      }
    }
    // All agree on each node's role and primary.
    const views = reports.map(({ nodes }) => nodes.map((node) => `${node.id}:${node.flags.includes('master') ? 'm' : 's'}:${node.primaryId}`).sort().join(' '));
    if (new Set(views).size > 1) return 'the nodes do not agree yet on who replicates whom';
    for (const { port, nodes } of reports) {
      const me = nodes.find((node) => node.flags.includes('myself'));
      if (me?.flags.includes('slave')) {
        const replication = parseInfo(await ask(port, ['INFO', 'replication']));
        if (replication.get('master_link_status') !== 'up') return `replica 127.0.0.1:${port} master_link_status:${replication.get('master_link_status')}`;
      }
    }
    return null;
  };

  const startNode = async (proc: NodeProcess): Promise<void> => {
    proc.server = await startRedisServer(proc.args, { cwd: dir });
  };

  const primaryForSlot = async (slot: number): Promise<ClusterNode> => {
    if (!Number.isInteger(slot) || slot < 0 || slot >= CLUSTER_SLOTS) throw new RangeError(`no hash slot ${slot}`);
    const nodes = await topology();
    const primary = nodes.find((node) => node.role === 'primary' && node.alive && node.slots.some(([first, last]) => first <= slot && slot <= last));
    if (!primary) throw new Error(`no running primary serves slot ${slot} now`);
    return primary;
  };

  let initial: ClusterNode[] = [];
  try {
    await Promise.all(procs.map(startNode));
    const address = procs.map((proc) => `127.0.0.1:${proc.port}`);
    try {
      await execFileAsync('redis-cli', ['--cluster', 'create', ...address, '--cluster-replicas', String(replicasPerPrimary), '--cluster-yes'], { timeout: timeoutMs });
    } catch (err) {
      const failed = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(`redis-cli --cluster create failed: ${failed.message}\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
    }
    await waitUntil('healthy cluster after create', clusterHealthy, timeoutMs);
    const nodes = await topology();
    initial = [...nodes.filter((node) => node.role === 'primary'), ...nodes.filter((node) => node.role === 'replica')];
  } catch (err) {
    await stop();
    throw err;
  }

  const cluster: RedisCluster = {
    get nodes() {
      return initial.map((node) => ({ ...node, alive: isAlive(byPort(node.port)!) }));
    },
    urls: procs.map((proc) => `redis://127.0.0.1:${proc.port}`),
    dir,
    topology,
    primaryForSlot,
    primaryForKey: (key: string) => primaryForSlot(keySlot(key)),

    async killPrimary(port: number) {
      const proc = byPort(port);
      if (!proc) throw new Error(`127.0.0.1:${port} is not a node of this cluster`);
      if (!isAlive(proc)) throw new Error(`127.0.0.1:${port} is not running`);
      const me = (await topology()).find((node) => node.port === port);
      if (me?.role !== 'primary') throw new Error(`127.0.0.1:${port} is not a primary now (${me?.role ?? 'unknown'})`);
      await proc.server!.kill('SIGKILL');
      return me.slots;
    },

    async waitForFailover(slot: number, limitMs = timeoutMs) {
      if (!Number.isInteger(slot) || slot < 0 || slot >= CLUSTER_SLOTS) throw new RangeError(`no hash slot ${slot}`);
      await waitUntil(`running primary for slot ${slot}`, async (reports) => {
        for (const { port, info, nodes } of reports) {
          if (info.get('cluster_state') !== 'ok') return `127.0.0.1:${port} cluster_state:${info.get('cluster_state')}`;
          const serving = nodes.find((node) => node.flags.includes('master') && node.slots.some(([first, last]) => first <= slot && slot <= last));
          if (!serving) return `127.0.0.1:${port} sees no primary for slot ${slot}`;
          const proc = byPort(serving.port);
          if (!proc || !isAlive(proc)) return `127.0.0.1:${port} still sees stopped 127.0.0.1:${serving.port} serving slot ${slot}`;
        }
        return null;
      }, limitMs);
      return primaryForSlot(slot);
    },

    async restartNode(port: number) {
      const proc = byPort(port);
      if (!proc) throw new Error(`127.0.0.1:${port} is not a node of this cluster`);
      if (isAlive(proc)) throw new Error(`127.0.0.1:${port} is running`);
      await startNode(proc);
      await waitUntil(`healthy cluster after restarting 127.0.0.1:${port}`, clusterHealthy, timeoutMs);
      return (await topology()).find((node) => node.port === port)!;
    },

    stop,
  };
  return cluster;
}
