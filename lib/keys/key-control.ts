/**
 * The key channel of a gateway on the in-memory store: a Unix socket beside its state file, through
 * which `npm run keys` runs its command in the running gateway, the one writer of that file (a CLI
 * that wrote the file itself would be overwritten by the gateway's next write, and unseen until a
 * restart). Beside it, an owner file holds the gateway's pid, so the CLI can tell "no gateway running"
 * (edit the file) from "a gateway it cannot reach" (fail, change nothing).
 *
 * One exchange per connection: the CLI writes `{"argv": [...]}` and a newline; the gateway answers
 * `{"status", "stdout", "stderr"}` and a newline, then closes. The socket is the owner's only (0600),
 * as the state file is.
 */
import fs from 'node:fs';
import net from 'node:net';
import type { GatewayConfig } from '../config';
import type { Logger } from '../observability/logger';
import type { GatewayStore } from '../store/types';
import { executeKeysCommand } from './key-commands';

/** What the gateway answers: the command's exit status and output. */
export interface KeysCommandReply {
  status: number;
  stdout: string;
  stderr: string;
}

/** Largest command line accepted on the channel, in bytes. */
const MAX_REQUEST_BYTES = 64 * 1024;

/** How long the CLI waits for the gateway's answer, ms. */
const REPLY_TIMEOUT_MS = 10_000;

/** The socket and the owner (pid) file of `stateFile`. */
export function keyChannelPaths(stateFile: string): { socket: string; owner: string } {
  return { socket: `${stateFile}.keys.sock`, owner: `${stateFile}.owner` };
}

/** The gateway process that owns `stateFile`, when one is running (its owner file names a live pid). */
export function findStateOwner(stateFile: string): { pid: number } | null {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(keyChannelPaths(stateFile).owner, 'utf8').trim());
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return { pid };
  } catch (err) {
    // EPERM: alive, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? { pid } : null;
  }
}

/**
 * Serve key commands for the gateway that owns `stateFile`: write the owner file, then listen on the
 * socket. A socket that cannot be opened is logged, and the owner file stays: the CLI then fails
 * rather than write a file this gateway would overwrite.
 * @param run runs one command line in this gateway (key-commands.ts) and answers its output
 * @returns close(): stop serving, remove the socket and the owner file
 */
export async function serveKeyCommands(
  stateFile: string, run: (argv: string[]) => Promise<KeysCommandReply>, logger: Pick<Logger, 'info' | 'error'>,
): Promise<{ close(): Promise<void> }> {
  const { socket, owner } = keyChannelPaths(stateFile);
  try {
    fs.writeFileSync(owner, `${process.pid}\n`, { mode: 0o600 });
  } catch (err) {
    // As a state file that cannot be written: logged, and the gateway serves on.
    logger.error({ message: 'owner file not written: `npm run keys` cannot tell this gateway runs', file: owner, error: (err as Error).message });
  }
  const server = net.createServer((connection) => answer(connection, run, logger));
  fs.rmSync(socket, { force: true });
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', (err) => {
      logger.error({ message: 'key channel not opened: `npm run keys` fails while this gateway runs', socket, error: err.message });
      resolve(false);
    });
    server.listen(socket, () => resolve(true));
  });
  if (listening) {
    fs.chmodSync(socket, 0o600);
    logger.info({ message: 'key channel open for `npm run keys`', socket });
  }
  return {
    async close() {
      if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(socket, { force: true });
      if (findStateOwner(stateFile)?.pid === process.pid) fs.rmSync(owner, { force: true });
    },
  };
}

/** Read one request line from `connection`, run it, write the answer. */
function answer(connection: net.Socket, run: (argv: string[]) => Promise<KeysCommandReply>, logger: Pick<Logger, 'error'>): void {
  let text = '';
  connection.setEncoding('utf8');
  connection.setTimeout(REPLY_TIMEOUT_MS, () => connection.destroy());
  connection.on('error', () => connection.destroy());
  connection.on('data', (chunk: string) => {
    text += chunk;
    if (text.length > MAX_REQUEST_BYTES) return void connection.destroy();
    const end = text.indexOf('\n');
    if (end < 0) return;
    connection.removeAllListeners('data');
    const argv = parseRequest(text.slice(0, end));
    const reply = argv ? run(argv) : Promise.resolve({ status: 2, stdout: '', stderr: 'the key channel takes {"argv": [strings]}\n' });
    reply.then(
      (result) => connection.end(`${JSON.stringify(result)}\n`),
      (err: Error) => {
        logger.error({ message: 'key command failed in the gateway', error: err.message });
        connection.end(`${JSON.stringify({ status: 1, stdout: '', stderr: `${err.message}\n` })}\n`);
      },
    );
  });
}

/** The argv of a request line, or null when it is not `{"argv": [strings]}`. */
function parseRequest(line: string): string[] | null {
  try {
    const { argv } = JSON.parse(line) as { argv?: unknown };
    return Array.isArray(argv) && argv.every((arg) => typeof arg === 'string') ? argv : null;
  } catch {
    return null;
  }
}

/**
 * Run a command line in the gateway that owns `stateFile`.
 * @throws Error when its socket cannot be reached or it does not answer within REPLY_TIMEOUT_MS
 *   (then it ran nothing, or the caller cannot know: the message says which)
 */
export function sendKeysCommand(stateFile: string, argv: string[], timeoutMs = REPLY_TIMEOUT_MS): Promise<KeysCommandReply> {
  const { socket } = keyChannelPaths(stateFile);
  return new Promise((resolve, reject) => {
    const connection = net.createConnection(socket);
    let text = '';
    let sent = false;
    const timer = setTimeout(() => connection.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    connection.setEncoding('utf8');
    connection.on('connect', () => {
      sent = true;
      connection.write(`${JSON.stringify({ argv })}\n`);
    });
    connection.on('data', (chunk: string) => (text += chunk));
    connection.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(sent ? `${err.message}; the command may have run: check with "list"` : `${socket}: ${err.message}; nothing changed`));
    });
    connection.on('end', () => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(text) as KeysCommandReply);
      } catch {
        reject(new Error('the gateway closed its key channel without an answer; the command may have run: check with "list"'));
      }
    });
  });
}

/**
 * Open the key channel of a running gateway: each command line runs against `store` with the
 * configuration in force, and one log line says what ran (command and key id, never an option's value).
 * @returns close(), as serveKeyCommands
 */
export function openKeyChannel(
  stateFile: string, store: GatewayStore, config: () => GatewayConfig, logger: Pick<Logger, 'info' | 'error'>,
): Promise<{ close(): Promise<void> }> {
  return serveKeyCommands(stateFile, async (argv) => {
    const output = { stdout: '', stderr: '' };
    const io = { stdout: (text: string) => (output.stdout += text), stderr: (text: string) => (output.stderr += text), env: {} };
    const { status, changed, line } = await executeKeysCommand(argv, store, config(), io);
    // As parsed once by executeKeysCommand; a command line refused as such names no key.
    const command = status === 2 ? line?.command ?? argv[0] : line?.command;
    const keyId = status === 2 ? undefined : line?.id;
    logger.info({ message: 'key command (npm run keys)', command: command?.slice(0, 32), key_id: keyId?.slice(0, 64) ?? null, status, changed });
    return { status, ...output };
  }, logger);
}
