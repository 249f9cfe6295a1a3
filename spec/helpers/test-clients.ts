/**
 * Where the client matrix lives: the SDKs and CLIs the integration specs drive are a package of their
 * own (spec/clients/package.json, its own lockfile and node_modules), so the gateway's `npm ci` does not
 * download them. `npm test` installs it first (spec/clients/ensure-installed.js); the compiler finds its
 * types through the `paths` of tsconfig.json, and the specs find its modules through `registerTestClients`.
 */
import Module from 'node:module';
import path from 'node:path';

/** The client matrix's node_modules (spec/clients/node_modules of the checkout). */
export const TEST_CLIENT_MODULES = path.resolve(__dirname, '..', '..', '..', 'spec', 'clients', 'node_modules');

/**
 * Lets `require`/`import` of a client package (`openai`, `@anthropic-ai/sdk`, ...) from a compiled spec
 * resolve in spec/clients/node_modules after the root node_modules: adds it to `NODE_PATH` and has Node
 * re-read it (`Module._initPaths`, Node's internal re-read of NODE_PATH, which a running process otherwise reads only at start).
 * Idempotent.
 */
export function registerTestClients(): void {
  const entries = (process.env.NODE_PATH ?? '').split(path.delimiter).filter(Boolean);
  if (entries.includes(TEST_CLIENT_MODULES)) return;
  process.env.NODE_PATH = [...entries, TEST_CLIENT_MODULES].join(path.delimiter);
  (Module as unknown as { _initPaths(): void })._initPaths();
}
