/** The bench scripts' command lines (bench/cli.ts): usage, mistakes as one line, exit statuses. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { compareDirectory, parseCommandLine, UsageError } from '../../bench/cli';

const BENCH_DIR = path.resolve(__dirname, '..', '..', 'bench');

/** Run a compiled bench script; it must stop on its own at once (nothing here starts a server). */
function runScript(name: string, args: string[]) {
  const result = spawnSync(process.execPath, [path.join(BENCH_DIR, `${name}.js`), ...args], { encoding: 'utf8', timeout: 15_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('bench command lines (bench/cli.ts)', () => {
  const config = { options: { reps: { type: 'string' as const }, smoke: { type: 'boolean' as const, default: false } } };

  it('parses the options it is given', () => {
    const { values } = parseCommandLine(['--reps=4', '--smoke'], config, 'usage: x');
    expect(values).to.deep.equal({ reps: '4', smoke: true });
  });

  it('turns an unknown option or a missing value into a UsageError carrying the usage', () => {
    expect(() => parseCommandLine(['--bogus'], config, 'usage: x [--reps=N]'))
      .to.throw(UsageError, /Unknown option '--bogus'[\s\S]*usage: x \[--reps=N\]/);
    expect(() => parseCommandLine(['--reps'], config, 'usage: x')).to.throw(UsageError, /argument missing/);
  });

  it('takes a --compare directory only when it holds a built bench gateway', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cli-'));
    try {
      expect(() => compareDirectory(dir)).to.throw(UsageError, /holds no bench\/gateway\.js/);
      fs.mkdirSync(path.join(dir, 'bench'));
      fs.writeFileSync(path.join(dir, 'bench', 'gateway.js'), '');
      expect(compareDirectory(path.relative(process.cwd(), dir))).to.equal(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const script of ['run', 'instructions']) {
    it(`${script}: --help prints every option and exits 0`, () => {
      const { status, stdout } = runScript(script, ['--help']);
      expect(status).to.equal(0);
      expect(stdout).to.match(/^usage: npm run bench/);
      expect(stdout).to.include('--compare=DIR');
      expect(stdout).to.include('native-stream-200');
    });
  }

  it('run: a mistake in the options is one line on stderr (no stack) and exit status 2', () => {
    for (const args of [['--bogus'], ['--reps=x'], ['--only=('], ['--only=zzz'], ['--compare=/nonexistent-dist']]) {
      const { status, stderr } = runScript('run', args);
      expect(status, args.join(' ')).to.equal(2);
      expect(stderr, args.join(' ')).to.match(/^bench: \S/).and.not.match(/\n\s+at /);
    }
  });

  it('instructions and profile-summary: the same for their mistakes', () => {
    const instructions = runScript('instructions', ['--store=x']);
    expect(instructions.status).to.equal(2);
    expect(instructions.stderr).to.equal('bench:instructions: --store: "x" is not memory or redis\n');
    const summary = runScript('profile-summary', ['/nonexistent.cpuprofile']);
    expect(summary.status).to.equal(2);
    expect(summary.stderr).to.match(/^profile-summary: \/nonexistent\.cpuprofile: ENOENT/).and.not.match(/\n\s+at /);
    expect(runScript('profile-summary', []).stderr).to.match(/^profile-summary: usage: /);
  });
});
