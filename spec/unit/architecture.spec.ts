/**
 * The shape of the code the README's architecture section describes: translators are pure (they import
 * nothing from lib/ or middleware/), and no module imports itself through others (no circular import).
 * Read from the TypeScript sources with madge.
 */
import path from 'node:path';
import { expect } from 'chai';
import madge from 'madge';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('architecture', function () {
  this.timeout(60_000);
  let graph: Awaited<ReturnType<typeof madge>>;
  before(async () => {
    graph = await madge(['lib', 'middleware', 'translators'].map((dir) => path.join(ROOT, dir)), {
      baseDir: ROOT,
      fileExtensions: ['ts'],
      tsConfig: path.join(ROOT, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: false } },
    });
  });

  it('reads the sources (a graph of the three folders)', () => {
    const files = Object.keys(graph.obj());
    expect(files).to.include.members(['lib/app.ts', 'middleware/native-proxy.ts', 'translators/usage.ts']);
  });

  it('translators import nothing from lib/ or middleware/', () => {
    const impure = Object.entries(graph.obj())
      .filter(([file]) => file.startsWith('translators/'))
      .flatMap(([file, imports]) => imports.filter((dep) => !dep.startsWith('translators/')).map((dep) => `${file} -> ${dep}`));
    expect(impure).to.deep.equal([]);
  });

  it('has no circular import', () => {
    expect(graph.circular()).to.deep.equal([]);
  });
});
