#!/usr/bin/env node
/**
 * The package's command (`bin` in package.json), for an installed package:
 *
 *   npx model-gateway              start the gateway (as `npm start`: config.json of the package, or GATEWAY_CONFIG)
 *   npx model-gateway start        the same
 *   npx model-gateway keys ...     the key command line (lib/keys/cli.ts; `keys --help` lists its commands)
 *
 * Exit status: that of the command run; 2 for an unknown command.
 */
const USAGE = `usage: model-gateway [start]          run the gateway (PORT, GATEWAY_CONFIG, UPSTREAM_URL, REDIS_URL, ...)
       model-gateway keys <command>   manage keys (model-gateway keys --help)
`;

const [command, ...rest] = process.argv.slice(2);
if (command === undefined || command === 'start') {
  // Loaded only for the command that runs: `keys` does not load the HTTP server's modules.
  void import('../server').then((server) => server.runServerOrExit());
} else if (command === 'keys') {
  void import('../keys/cli').then((keys) => keys.runKeysCliProcess(rest));
} else if (command === '--help' || command === '-h' || command === 'help') {
  process.stdout.write(USAGE);
} else {
  process.stderr.write(`model-gateway: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  process.exitCode = 2;
}
