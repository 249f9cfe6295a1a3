/**
 * Preload for a gateway process under test (`node --require dist/spec/helpers/scope-probe.js ...`):
 * writes {@link SCOPE_ENTERED} on stderr, once, when a request enters the logger's request scope (an
 * AsyncLocalStorage run with a `{ requestId }` store, lib/observability/logger.ts), so a test can tell whether the
 * process handles its requests inside it. Imported for its constants (the test process), it patches
 * nothing: only a process that preloads it is probed.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export const SCOPE_ENTERED = 'scope-probe: a request entered the request scope';

/** This file, compiled: the path to pass to `--require`. */
export const SCOPE_PROBE = __filename;

function installProbe(): void {
  const run = AsyncLocalStorage.prototype.run;
  let reported = false;
  AsyncLocalStorage.prototype.run = function probedRun<R>(this: AsyncLocalStorage<unknown>, store: unknown, callback: (...args: any[]) => R, ...args: any[]): R {
    if (!reported && typeof store === 'object' && store !== null && 'requestId' in store) {
      reported = true;
      process.stderr.write(`${SCOPE_ENTERED}\n`);
    }
    return run.call(this, store, callback, ...args) as R;
  };
}

if (process.execArgv.includes(SCOPE_PROBE)) installProbe();
