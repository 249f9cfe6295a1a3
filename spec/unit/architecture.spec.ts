/**
 * The shape of the code docs/architecture.md describes, read from the TypeScript sources with madge:
 * - translators are pure: they import nothing from lib/, middleware/ or routes/;
 * - the pipeline's steps (middleware/) and what they stand on (lib/) never import a route handler
 *   (routes/), and no route imports another, except the reply skeleton every route runs
 *   (routes/reply.ts, reply-reading.ts, exchange.ts) and the pinned objects' helpers (routes/pinned-upstream.ts);
 * - lib/ imports no pipeline step, but for the composition at its top (app, gateway, server, index) and the
 *   admin API (lib/admin/), a router of its own that reads bodies with the pipeline's JSON and validation steps;
 * - lib/'s top holds only that composition; every other module is in a room (a folder);
 * - no module imports itself through others (no circular import);
 * - no source file is over 300 lines, but the few still to split (LONG_FILES), none of which may grow.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import madge from 'madge';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const FOLDERS = ['lib', 'middleware', 'routes', 'translators'];
/** The composition: the only modules at lib/'s top, and the only ones of lib/ that wire steps and routes. */
const COMPOSITION = ['lib/app.ts', 'lib/gateway.ts', 'lib/index.ts', 'lib/server.ts'];
/**
 * Files still over 300 lines, with the length they may not pass: each is to be split by responsibility
 * (issue 41; none left); a new file over 300 lines, or one of these growing, fails.
 */
const LONG_FILES: Record<string, number> = {};
/** What every route may share. */
const SHARED_BY_ROUTES = ['routes/reply.ts', 'routes/reply-reading.ts', 'routes/exchange.ts', 'routes/pinned-upstream.ts'];

describe('architecture', function () {
  this.timeout(60_000);
  let graph: Record<string, string[]>;
  let circular: string[][];
  before(async () => {
    const result = await madge(FOLDERS.map((dir) => path.join(ROOT, dir)), {
      baseDir: ROOT,
      fileExtensions: ['ts'],
      tsConfig: path.join(ROOT, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: false } },
    });
    graph = result.obj();
    circular = result.circular();
  });

  const edges = (from: (file: string) => boolean, to: (dep: string) => boolean) => Object.entries(graph)
    .filter(([file]) => from(file))
    .flatMap(([file, imports]) => imports.filter((dep) => to(dep) && dep !== file).map((dep) => `${file} -> ${dep}`));

  it('reads the sources (a graph of the four folders)', () => {
    expect(Object.keys(graph)).to.include.members(['lib/app.ts', 'routes/native-proxy.ts', 'middleware/auth.ts', 'translators/usage.ts']);
  });

  it('translators import nothing from lib/, middleware/ or routes/', () => {
    expect(edges((file) => file.startsWith('translators/'), (dep) => !dep.startsWith('translators/'))).to.deep.equal([]);
  });

  it('steps and lib/ import no route handler (but the composition, which mounts them)', () => {
    const isStepOrLib = (file: string) => (file.startsWith('middleware/') || file.startsWith('lib/')) && !COMPOSITION.includes(file);
    expect(edges(isStepOrLib, (dep) => dep.startsWith('routes/'))).to.deep.equal([]);
  });

  it('lib/ imports no pipeline step, but the composition and the admin API', () => {
    const isLib = (file: string) => file.startsWith('lib/') && !COMPOSITION.includes(file) && !file.startsWith('lib/admin/');
    expect(edges(isLib, (dep) => dep.startsWith('middleware/'))).to.deep.equal([]);
  });

  it('routes do not import each other (the reply skeleton and the pinned objects\' helpers are shared)', () => {
    const isHandler = (file: string) => file.startsWith('routes/') && !SHARED_BY_ROUTES.includes(file);
    expect(edges(isHandler, isHandler)).to.deep.equal([]);
  });

  it('keeps only the composition at the top of lib/', () => {
    const top = fs.readdirSync(path.join(ROOT, 'lib')).filter((name) => name.endsWith('.ts')).map((name) => `lib/${name}`);
    expect(top.sort()).to.deep.equal([...COMPOSITION].sort());
  });

  it('has no circular import', () => {
    expect(circular).to.deep.equal([]);
  });

  it('has no source file over 300 lines (but those still to split, none longer than it was)', () => {
    const long = Object.keys(graph)
      .map((file) => ({ file, lines: fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1 }))
      .filter(({ file, lines }) => lines > (LONG_FILES[file] ?? 300))
      .map(({ file, lines }) => `${file}: ${lines}`);
    expect(long).to.deep.equal([]);
  });
});
