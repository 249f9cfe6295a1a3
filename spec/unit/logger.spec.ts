/** The gateway's logger: JSON lines on stdout, stamped with the request id in scope. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

const loggerModule = path.resolve(__dirname, '..', '..', 'lib', 'observability', 'logger.js');

/** Run `body` in a child process with `createLogger` and `requestScope` in scope; its stdout lines, parsed. */
function logLines(body: string): Array<Record<string, unknown>> {
  const script = `const { createLogger, requestScope } = require(${JSON.stringify(loggerModule)}); const l = createLogger(); ${body}`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  expect(child.status, child.stderr).to.equal(0);
  return child.stdout.trim().split('\n').map((line) => JSON.parse(line));
}

describe('logger', () => {
  it('writes one JSON object per line with an ISO timestamp, and loses no line when the process exits right after', () => {
    const lines = logLines("for (let i = 0; i < 3; i++) l.info({ message: 'line', i }); process.exit(0);");
    expect(lines.map((line) => line.i)).to.deep.equal([0, 1, 2]);
    for (const line of lines) expect(line).to.include({ level: 'info', message: 'line' }).and.to.have.property('timestamp').that.matches(/^\d{4}-\d\d-\d\dT.*Z$/);
  });

  it('stamps lines logged inside a request scope with its request id, and no others', () => {
    const lines = logLines("requestScope.run({ requestId: 'req_abc' }, () => l.info({ message: 'inside' })); l.info({ message: 'outside' });");
    expect(lines[0]).to.include({ message: 'inside', request_id: 'req_abc' });
    expect(lines[1]).to.include({ message: 'outside' }).and.not.to.have.property('request_id');
  });

  it('writes what JSON.stringify cannot (a BigInt, a cycle) instead of throwing', () => {
    const lines = logLines("const o = { message: 'odd', n: 10n }; o.self = o; l.info(o);");
    expect(lines[0]).to.include({ message: 'odd', n: '10' });
  });

  it('keeps the members in the order they were written, the timestamp last', () => {
    const lines = logLines("l.info({ message: 'ordered', request_id: 'req_1', status: 200 });");
    expect(Object.keys(lines[0])).to.deep.equal(['message', 'request_id', 'status', 'level', 'timestamp']);
  });
});
