/**
 * Bench child: a peer, the Portkey gateway (`@portkey-ai/gateway`, its Node server `build/start-server.js`,
 * installed by `npm run bench` under bench/peers/), in this process so that the probe's CPU and memory
 * figures are its own. Requests name the upstream with Portkey's own headers (bench/peers-requests.ts).
 *
 * Usage: node dist/bench/portkey.js
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { serveChild } from './ipc';

const ENTRY = path.resolve(__dirname, '..', '..', 'bench', 'peers', 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');

// The server is an ES module; under CommonJS output TypeScript would turn import() into require().
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

/** A loopback port free a moment ago (Portkey takes its port from `--port=`, not from the OS). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on `port` (polled every 50 ms, for at most 15 s). */
async function waitForListener(port: number): Promise<void> {
  for (const started = Date.now(); Date.now() - started < 15_000;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(true)).once('error', () => resolve(false));
      socket.once('connect', () => socket.destroy());
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Portkey gateway did not listen on ${port} within 15 s`);
}

async function main(): Promise<void> {
  if (!fs.existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: npm run bench installs bench/peers (node spec/clients/ensure-installed.js bench/peers)`);
  const port = await freePort();
  // Its server reads its options from argv; headless: no UI. It logs a banner to stdout (the parent ignores it).
  process.argv = [process.argv[0], ENTRY, `--port=${port}`, '--headless'];
  await importModule(pathToFileURL(ENTRY).href);
  await waitForListener(port);
  serveChild(port);
}

main().catch((err) => {
  process.stderr.write(`portkey child: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
