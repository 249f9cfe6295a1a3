/** Deploy files: Procfile, build scripts, Dockerfile, and the README's Deploy section listing every variable read. */
import fs from 'node:fs';
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
