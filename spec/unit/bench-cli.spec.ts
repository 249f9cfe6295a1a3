/** The bench's command line (bench/run.ts, bench/cli.ts): usage, mistakes as one line, exit statuses. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

const BENCH_DIR = path.resolve(__dirname, '..', '..', 'bench');

/** Run a compiled bench script; it must stop on its own at once (nothing here starts a server). */
function runScript(name: string, args: string[]) {
  const result = spawnSync(process.execPath, [path.join(BENCH_DIR, `${name}.js`), ...args], { encoding: 'utf8', timeout: 15_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('bench command line (npm run bench)', () => {
  it('--help prints every option and exits 0', () => {
    const { status, stdout } = runScript('run', ['--help']);
    expect(status).to.equal(0);
    expect(stdout).to.match(/^usage: npm run bench/);
    expect(stdout).to.include('--compare=DIR');
    expect(stdout).to.include('chat-stream-300ms');
  });

  it('a mistake in the options is one line on stderr (no stack) and exit status 2', () => {
    for (const args of [['--bogus'], ['--reps=x'], ['--only=('], ['--only=zzz'], ['--compare=/nonexistent-dist'], ['--profile']]) {
      const { status, stderr } = runScript('run', args);
      expect(status, args.join(' ')).to.equal(2);
      expect(stderr, args.join(' ')).to.match(/^bench: \S/).and.not.match(/\n\s+at /);
    }
  });
});
