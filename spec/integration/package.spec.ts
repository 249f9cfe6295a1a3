/**
 * The package as an integrator installs it: `npm pack` of this checkout (built by `npm test`'s pretest),
 * installed into an empty folder with nothing but Node, then `model-gateway` (the package's `bin`) run from
 * there: it serves /healthz and a reply of the embedded simulated upstream, and `model-gateway keys`
 * runs the key command line; `require('model-gateway')` resolves through the `exports` map.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { tempDir } from '../helpers/temp-dir';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Run npm in `cwd`; throws with its output when it fails. */
function npm(args: string[], cwd: string): string {
  const result = spawnSync(NPM, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'error' } });
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('the installed package (npm pack)', function () {
  this.timeout(120_000);
  let app: string;
  let tarball: string;
  let gateway: ChildProcess | undefined;

  before(() => {
    const dir = tempDir('gw-pack-');
    // The build is npm test's (pretest); prepack would build it again.
    const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT)) as { filename: string; files: { path: string }[] }[];
    tarball = path.join(dir, packed[0].filename);
    const files = packed[0].files.map((file) => file.path);
    expect(files).to.include.members(['LICENSE', 'config.json', 'dist/lib/cli/model-gateway.js', 'dist/lib/index.d.ts', 'dashboard/index.html']);
    expect(files.filter((file) => file.startsWith('dist/spec/') || file.startsWith('dist/bench/') || file.endsWith('.map')), 'test, bench and map files').to.deep.equal([]);
    app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'integrator-app', private: true }));
    npm(['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], app);
  });

  after(() => {
    gateway?.kill('SIGTERM');
  });

  it('installs only runtime dependencies (no http-proxy, no TypeScript)', () => {
    const installed = fs.readdirSync(path.join(app, 'node_modules'));
    expect(installed).to.include.members(['model-gateway', 'express', 'redis', 'winston']);
    expect(installed).to.not.include.members(['http-proxy', 'typescript', 'mocha']);
  });

  it('starts with `model-gateway` and serves /healthz and a simulated reply', async () => {
    const stateFile = path.join(app, 'state.json');
    gateway = spawn(path.join(app, 'node_modules', '.bin', 'model-gateway'), [], {
      cwd: app,
      env: { PATH: process.env.PATH ?? '', PORT: '0', GATEWAY_STATE_FILE: stateFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const listening = await new Promise<{ port: number; key: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`model-gateway did not start:\n${output}`)), 20_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const port = /"port":(\d+)/.exec(output.split('\n').find((line) => line.includes('gateway listening')) ?? '');
        const key = /sk-cs4-[A-Za-z0-9_-]+/.exec(output);
        if (port && key) {
          clearTimeout(timer);
          resolve({ port: Number(port[1]), key: key[0] });
        }
      };
      gateway!.stdout!.on('data', onData);
      gateway!.stderr!.on('data', onData);
      gateway!.once('exit', (code) => reject(new Error(`model-gateway exited with ${code}:\n${output}`)));
    });
    const base = `http://127.0.0.1:${listening.port}`;
    const health = await fetch(`${base}/healthz`);
    expect(health.status).to.equal(200);
    expect(await health.json()).to.deep.equal({ status: 'ok' });

    const reply = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': listening.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', max_tokens: 50, messages: [{ role: 'user', content: 'Hello' }] }),
    });
    expect(reply.status).to.equal(200);
    const message = await reply.json() as { type: string; content: { type: string; text: string }[] };
    expect(message.type).to.equal('message');
    expect(message.content[0].text).to.contain('simulated reply');

    gateway.kill('SIGTERM');
    await new Promise((resolve) => gateway!.once('exit', resolve));
    gateway = undefined;

    // The key command line of the same install, on the state file the gateway left.
    const keys = spawnSync(path.join(app, 'node_modules', '.bin', 'model-gateway'), ['keys', 'list', '--json'], {
      cwd: app, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', GATEWAY_STATE_FILE: stateFile },
    });
    expect(keys.status, keys.stderr).to.equal(0);
    expect(JSON.parse(keys.stdout)).to.be.an('array');
  });

  it('exports the library API through its exports map', () => {
    const probe = spawnSync(process.execPath, ['-e', "const g = require('model-gateway'); process.stdout.write(typeof g.createGateway + ' ' + typeof g.startGateway)"], { cwd: app, encoding: 'utf8' });
    expect(probe.stdout, probe.stderr).to.equal('function function');
    const hidden = spawnSync(process.execPath, ['-e', "require('model-gateway/dist/lib/app')"], { cwd: app, encoding: 'utf8' });
    expect(hidden.status, 'an internal module is not exported').to.not.equal(0);
    expect(hidden.stderr).to.contain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('answers an unknown command with its usage and exit status 2', () => {
    const run = spawnSync(path.join(app, 'node_modules', '.bin', 'model-gateway'), ['serve-everything'], { cwd: app, encoding: 'utf8' });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.contain('usage: model-gateway');
  });
});
