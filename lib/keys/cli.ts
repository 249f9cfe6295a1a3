/**
 * The key command line: `npm run keys -- <command> ...`, against the configured store (Redis when
 * `REDIS_URL` is set, else the in-memory store's state file `GATEWAY_STATE_FILE`). New secrets are
 * printed once and stored only as SHA-256 hashes.
 *
 *   create [--id ID] [--name NAME] [--rate-limit N] [--models ID,ID|all] [--cap CREDITS|none]
 *   list [--month YYYY-MM]
 *   rotate ID [--grace DURATION]          (default 24h; e.g. 0, 90s, 30m, 12h, 7d)
 *   revoke ID | restore ID
 *   set-limits ID [--rate-limit N] [--models ID,ID|all] [--cap CREDITS|none] [--name NAME]
 *   usage ID [--month YYYY-MM]
 * Add --json for machine-readable output. Exit status: 0 done, 1 refused (unknown key, ...), 2 bad usage.
 */
import { loadConfig, type GatewayConfig } from '../config';
import { createStore, MemoryStore, seedConfigKeys } from '../store';
import { loadMemoryState, saveMemoryState } from '../store/memory-persistence';
import type { GatewayStore } from '../store/types';
import { executeKeysCommand, parseCommandLine, USAGE, UsageError, type CliIo, type KeysCommandLine } from './key-commands';
import { findStateOwner, sendKeysCommand } from './key-control';

export { parseDuration, USAGE, UsageError, type CliIo } from './key-commands';

/**
 * Run one CLI command, its command line parsed once here (and, sent through the key channel, once in
 * the gateway). With the in-memory store and a gateway running on its state file, the command
 * runs in that gateway (its key channel, key-control.ts): the one writer of the file, whose store it
 * changes at once. Unreachable, it fails and changes nothing. With no gateway running, it edits the file.
 * @returns the exit status
 */
export async function runKeysCli(argv: string[], io: CliIo): Promise<number> {
  let line: KeysCommandLine;
  try {
    line = parseCommandLine(argv);
    if (line.values.help || !line.command) {
      (line.values.help ? io.stdout : io.stderr)(USAGE);
      return line.values.help ? 0 : 2;
    }
  } catch (err) {
    io.stderr(`${(err as Error).message}\n\n${USAGE}`);
    return err instanceof UsageError ? 2 : 1;
  }
  let config: GatewayConfig;
  try {
    config = loadConfig(undefined, io.env);
  } catch (err) {
    io.stderr(`${(err as Error).message}\n`);
    return 1;
  }
  const embedded = !config.redisUrl && !config.redisClusterNodes;
  const owner = embedded ? findStateOwner(config.stateFile) : null;
  if (owner) return runInGateway(owner, config.stateFile, argv, io);
  let store: GatewayStore | undefined;
  try {
    store = await openStore(config);
    const outcome = await executeKeysCommand(line, store, config, io);
    if (outcome.changed && store instanceof MemoryStore) {
      saveMemoryState(store, config.stateFile);
      io.stderr(`(in-memory store: no gateway is running on ${config.stateFile}; saved there, read at its next start.)\n`);
    }
    return outcome.status;
  } catch (err) {
    io.stderr(`${(err as Error).message}\n`);
    return 1;
  } finally {
    await store?.close();
  }
}

/** The command run by the gateway that owns the state file; its output printed here. */
async function runInGateway(owner: { pid: number }, stateFile: string, argv: string[], io: CliIo): Promise<number> {
  try {
    const reply = await sendKeysCommand(stateFile, argv);
    io.stdout(reply.stdout);
    io.stderr(reply.stderr);
    return reply.status;
  } catch (err) {
    io.stderr(
      `a gateway (pid ${owner.pid}) is running on ${stateFile}, and its key channel failed: ${(err as Error).message}. ` +
        `Retry, or stop that gateway first.\n`,
    );
    return 1;
  }
}

/** The configured store, with the keys of config.json that are missing from it created. */
async function openStore(config: GatewayConfig): Promise<GatewayStore> {
  const store = await createStore(config);
  if (store instanceof MemoryStore) loadMemoryState(store, config.stateFile);
  // Only keys missing from the store: the file's other changes are for the gateway to apply at its start or reload.
  await seedConfigKeys(store, config, true);
  return store;
}

if (require.main === module) runKeysCliProcess(process.argv.slice(2));

/** {@link runKeysCli} as a process: the real stdout, stderr and environment; its status becomes the exit code. */
export function runKeysCliProcess(argv: string[]): void {
  runKeysCli(argv, {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    env: process.env,
  }).then(
    (status) => {
      process.exitCode = status;
    },
    (err) => {
      process.stderr.write(`${(err as Error).stack ?? err}\n`);
      process.exitCode = 1;
    },
  );
}
