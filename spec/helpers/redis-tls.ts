/**
 * A disposable Redis that speaks TLS only, for tests of `rediss://` connections: a throwaway CA and a
 * server certificate for 127.0.0.1 and localhost made with `openssl` in a temporary directory, and a
 * `redis-server` with no plain TCP port (`--port 0`), a TLS port on 127.0.0.1 (a free one), a random
 * password, and no persistence. `stop()` kills it and removes the directory; it is killed at the test
 * process's exit, and the directory removed, should `stop()` never run (spec/helpers/redis-process.ts,
 * spec/helpers/temp-dir.ts). About 0.2 s to start on the development machine (EC P-256 keys: no RSA
 * key generation).
 *
 * Needs `openssl` (Debian `openssl`) and a `redis-server` built with TLS (Debian's `redis-server` is:
 * `ldd $(command -v redis-server)` lists libssl); without them `startTlsRedis` throws at once with one
 * line saying which.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { freePort } from './ports';
import { tempDir } from './temp-dir';
import { requireCommand, startRedisServer } from './redis-process';

const execFileAsync = promisify(execFile);

/** A running TLS Redis; see {@link startTlsRedis}. */
export interface TlsRedis {
  /** `rediss://default:<password>@127.0.0.1:<port>`. */
  url: string;
  /** The TLS port on 127.0.0.1 (there is no plain port). */
  port: number;
  /** The `default` user's password (random hex). */
  password: string;
  /** Path of the CA certificate (PEM) that signed the server's certificate. */
  caFile: string;
  /** The CA certificate itself (PEM), for `createClient({ url, socket: { tls: true, ca: caPem } })`. */
  caPem: string;
  /** The temporary directory holding the CA, the server's key and certificate (removed by `stop()`). */
  dir: string;
  /** Kill the server (SIGKILL) and remove the directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** Run `openssl` with `args` (no shell) in `cwd`. @throws Error with its output when it fails */
async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await execFileAsync('openssl', args, { cwd, timeout: 10_000 });
  } catch (err) {
    const failed = err as { stderr?: string; message: string };
    throw new Error(`openssl ${args.join(' ')} failed: ${failed.message}\n${failed.stderr ?? ''}`);
  }
}

/**
 * Make, in `dir`, a CA (`ca.crt`, `ca.key`) and a server key and certificate it signed (`server.key`,
 * `server.crt`) for IP 127.0.0.1 and DNS localhost, valid for two days (from a day ago: a clock a little
 * behind does not matter). EC P-256 keys.
 * @param subjectAltName the names the server certificate is for (openssl's syntax); default 127.0.0.1 and localhost
 * @returns the absolute paths
 */
export async function makeTestCertificates(dir: string, subjectAltName = 'IP:127.0.0.1,DNS:localhost'): Promise<{ caFile: string; caKeyFile: string; certFile: string; keyFile: string }> {
  requireCommand('openssl', 'the Redis TLS tests');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl([
    'req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=Model Gateway test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ], dir);
  await openssl(['req', '-new', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], dir);
  fs.writeFileSync(path.join(dir, 'server.ext'), [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    `subjectAltName=${subjectAltName}`,
    '',
  ].join('\n'));
  await openssl([
    'x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', `0x${crypto.randomBytes(8).toString('hex')}`,
    '-days', '2', '-extfile', 'server.ext', '-out', 'server.crt',
  ], dir);
  return {
    caFile: path.join(dir, 'ca.crt'),
    caKeyFile: path.join(dir, 'ca.key'),
    certFile: path.join(dir, 'server.crt'),
    keyFile: path.join(dir, 'server.key'),
  };
}

/**
 * Start a TLS-only `redis-server` on a free loopback port with a throwaway CA (see the module's
 * docstring) and wait until it answers `PING` over TLS, verifying its certificate against that CA
 * and authenticating with its password.
 * @returns its URL (`rediss://default:<password>@127.0.0.1:<port>`), the CA, `stop()`
 * @throws Error naming the Debian package when `openssl` or `redis-server` is missing; Error saying so
 *   when the installed redis-server was built without TLS (it rejects `--tls-port`); Error with the
 *   server's log when it does not start or answer within 10 s. The directory is removed and the server
 *   killed before any of these is thrown.
 */
export async function startTlsRedis(): Promise<TlsRedis> {
  requireCommand('redis-server', 'the Redis TLS tests');
  requireCommand('openssl', 'the Redis TLS tests');
  const dir = tempDir('gateway-test-redis-tls-');
  let server: Awaited<ReturnType<typeof startRedisServer>> | undefined;
  const stop = async (): Promise<void> => {
    await server?.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { caFile, certFile, keyFile } = await makeTestCertificates(dir);
    const port = await freePort();
    const password = crypto.randomBytes(16).toString('hex');
    try {
      server = await startRedisServer([
        '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--dir', dir,
        '--tls-cert-file', certFile, '--tls-key-file', keyFile, '--tls-ca-cert-file', caFile, '--tls-auth-clients', 'no',
        '--requirepass', password, '--save', '', '--appendonly', 'no',
      ], { cwd: dir });
    } catch (err) {
      // A build without TLS does not know the tls-* directives: "Bad directive or wrong number of
      // arguments" after ">>> 'tls-port ...'".
      const message = (err as Error).message;
      if (/Bad directive/.test(message) && />>> 'tls-/.test(message)) {
        const { stdout } = await execFileAsync('redis-server', ['--version']).catch(() => ({ stdout: '' }));
        throw new Error(`this redis-server was built without TLS support (${stdout.trim()}): it rejects --tls-port; install Debian's redis-server, built with TLS\n${message}`);
      }
      throw err;
    }
    const caPem = fs.readFileSync(caFile, 'utf8');
    const url = `rediss://default:${password}@127.0.0.1:${port}`;
    const client = createClient({ url, socket: { tls: true, ca: caPem, connectTimeout: 10_000, reconnectStrategy: false } });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const pong = await client.ping();
      if (pong !== 'PONG') throw new Error(`PING over TLS answered ${pong}`);
    } catch (err) {
      throw new Error(`redis-server with TLS on 127.0.0.1:${port} did not answer PING over TLS: ${(err as Error).message}\n${server.output()}`);
    } finally {
      if (client.isOpen) client.destroy();
    }
    return { url, port, password, caFile, caPem, dir, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
