/** Deploy files: Procfile, build scripts, Dockerfile, and the README's Deploy section listing every variable read. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/** Every `*.ts` file under a directory. */
function sources(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    return entry.isDirectory() ? sources(rel) : rel.endsWith('.ts') ? [rel] : [];
  });
}

describe('deploy files', () => {
  it('has a Procfile web line that runs the built server', () => {
    const web = read('Procfile').split('\n').find((line) => line.startsWith('web:'));
    expect(web).to.equal('web: node dist/lib/server.js');
    expect(fs.existsSync(path.join(ROOT, 'dist', 'lib', 'server.js'))).to.equal(true);
  });

  it('has a multi-stage Dockerfile running dist as a non-root user', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile.match(/^FROM /gm)).to.have.length(2);
    expect(dockerfile).to.match(/^USER (?!root)\w+/m);
    expect(dockerfile).to.match(/^CMD \["node", "dist\/lib\/server\.js"\]/m);
    // Files the running gateway reads beside dist/: the config and the dashboard's static files.
    expect(dockerfile).to.match(/^COPY .*config\.json/m);
    expect(dockerfile).to.match(/^COPY .*dashboard \.\/dashboard$/m);
  });

  it('lists in the README Deploy section every environment variable the code reads', () => {
    const readme = read('README.md');
    const deploy = readme.slice(readme.indexOf('## Deploy'));
    const section = deploy.slice(0, deploy.indexOf('\n## ', 5) === -1 ? undefined : deploy.indexOf('\n## ', 5));
    const names = new Set<string>(['PORT', 'WEB_CONCURRENCY', 'REDIS_URL', 'UPSTREAM_URL', 'UPSTREAM_API_KEY', 'ADMIN_TOKEN', 'METRICS_TOKEN']);
    for (const file of sources('lib')) {
      for (const match of read(file).matchAll(/\b(?:process\.env|env)(?:\.([A-Z][A-Z0-9_]+)|\[['"]([A-Z][A-Z0-9_]+)['"]\])/g)) names.add(match[1] ?? match[2]);
    }
    expect(names.size).to.be.greaterThan(7);
    for (const name of names) expect(section, name).to.contain(`\`${name}\``);
  });
});

describe('install', () => {
  const rootPackage = JSON.parse(read('package.json'));
  const clientPackage = JSON.parse(read('spec/clients/package.json'));
  /** The client matrix: SDKs and CLIs only the tests drive. */
  const CLIENTS = ['@anthropic-ai/claude-code', '@anthropic-ai/claude-agent-sdk', '@openai/codex', '@anthropic-ai/sdk', 'anthropic-sdk-legacy', 'openai', 'openai-v6', '@langchain/core', 'ai', '@openai/agents'];

  it("keeps the client matrix out of the gateway's install, in spec/clients with its own lockfile", () => {
    const rootDeps = { ...rootPackage.dependencies, ...rootPackage.devDependencies };
    for (const name of CLIENTS) {
      expect(rootDeps, name).to.not.have.property(name);
      expect(clientPackage.dependencies, name).to.have.property(name);
    }
    expect(JSON.parse(read('spec/clients/package-lock.json')).packages[''].dependencies).to.deep.equal(clientPackage.dependencies);
  });

  it('builds only the gateway on start and for Heroku and Docker; the test build installs the clients first', () => {
    expect(rootPackage.scripts.prestart).to.equal('npm run build:app');
    expect(rootPackage.scripts['heroku-postbuild']).to.equal('npm run build:app');
    expect(read('Dockerfile')).to.match(/^RUN npm run build:app /m);
    expect(rootPackage.scripts.prebuild).to.contain('node spec/clients/ensure-installed.js');
    expect(read('.ci/run')).to.contain('node spec/clients/ensure-installed.js');
  });

  it('runs the keys CLI from the built code, building only when there is none (never removing dist/)', () => {
    expect(rootPackage.scripts.prekeys).to.not.match(/npm run build(?!:app)/);
    expect(rootPackage.scripts.prekeys).to.contain("existsSync('dist/lib/keys/cli.js')");
    expect(rootPackage.scripts['prebuild:app']).to.equal(undefined);
  });

  it('npm run keys runs the built CLI as it is: no rebuild, dist/ left in place', () => {
    const marker = path.join(ROOT, 'dist', `.keys-cli-marker-${process.pid}`);
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keys-cli-'));
    fs.writeFileSync(marker, '');
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, GATEWAY_STATE_FILE: path.join(stateDir, 'state.json'), GATEWAY_CONFIG: path.join(ROOT, 'config.json') };
      delete env.REDIS_URL;
      const run = spawnSync('npm', ['run', '--silent', 'keys', '--', 'list'], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });
      expect(run.status, run.stderr).to.equal(0);
      expect(run.stdout).to.equal('no keys\n');
      expect(fs.existsSync(marker), 'dist/ was removed').to.equal(true);
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('declares engines every root dependency accepts on the lowest Node the gateway supports', () => {
    const lowest = rootPackage.engines.node.replace(/^>=/, '');
    const lock = JSON.parse(read('package-lock.json'));
    const refusing = Object.entries<any>(lock.packages)
      .filter(([name, entry]) => name !== '' && typeof entry.engines?.node === 'string')
      .filter(([, entry]) => /^>=\s*(2[1-9]|[3-9]\d)/.test(entry.engines.node) || /^\^?2[2-9]/.test(entry.engines.node))
      .map(([name, entry]) => `${name} (${entry.engines.node}, lowest supported ${lowest})`);
    expect(refusing).to.deep.equal([]);
  });
});
