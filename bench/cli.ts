/**
 * The bench scripts' command lines: node:util `parseArgs`, `--help`, and mistakes reported as one line
 * with the usage, never as a stack trace.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake on the command line: printed without a stack, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * Parse `argv` with `parseArgs` (strict: an unknown option or a missing value is a mistake).
 * `--help` or `-h` anywhere prints `usage` to stdout and exits 0 before anything is parsed.
 * @param config parseArgs' options (and `allowPositionals` where the script takes positionals)
 * @param usage the script's usage text: the command and every option, one per line
 * @throws UsageError with parseArgs' message and the usage, on an unknown option or a missing value
 */
export function parseCommandLine<T extends ParseArgsConfig>(argv: string[], config: T, usage: string): ReturnType<typeof parseArgs<T>> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage.trimEnd()}\n`);
    process.exit(0);
  }
  try {
    return parseArgs<T>({ ...config, args: argv });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${usage.trimEnd()}`);
  }
}

/**
 * The `dist` directory a `--compare=DIR` names, as an absolute path.
 * @throws UsageError when DIR holds no built bench gateway (`bench/gateway.js`)
 */
export function compareDirectory(dir: string): string {
  const resolved = path.resolve(dir);
  if (!fs.existsSync(path.join(resolved, 'bench', 'gateway.js'))) {
    throw new UsageError(`--compare: ${resolved} holds no bench/gateway.js (give the dist directory of another build)`);
  }
  return resolved;
}

/**
 * Print a failed script's error and exit: a {@link UsageError} as its message alone, with status 2;
 * anything else with its stack, with status 1.
 * @param script the script's name, first on the line (`bench`)
 */
export function exitWithError(script: string, err: unknown): never {
  if (err instanceof UsageError) {
    process.stderr.write(`${script}: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`${script} failed: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
}
