/** The gateway's logger: JSON lines on stdout, stamped with the request id in scope. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import winston from 'winston';
import { BatchedLineTransport, jsonLineFormat } from '../../lib/logger';

const loggerModule = path.resolve(__dirname, '..', '..', 'lib', 'logger.js');

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
    expect(lines[0]).to.include({ message: 'odd' });
  });
});

describe('BatchedLineTransport', () => {
  /** A logger on a BatchedLineTransport whose writes are recorded. */
  function recordingLogger(): { logger: winston.Logger; writes: string[]; transport: BatchedLineTransport } {
    const writes: string[] = [];
    const transport = new BatchedLineTransport({ destination: { write: (text: string) => writes.push(text) } });
    const logger = winston.createLogger({ level: 'info', format: winston.format.json(), transports: [transport] });
    return { logger, writes, transport };
  }
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('writes the lines of one event-loop turn in one write, in order, one JSON object per line', async () => {
    const { logger, writes } = recordingLogger();
    logger.info({ message: 'first', n: 1 });
    logger.warn({ message: 'second', n: 2 });
    logger.debug({ message: 'below the level' });
    expect(writes).to.deep.equal([]);
    await nextTurn();
    await nextTurn();
    expect(writes).to.have.length(1);
    const lines = writes[0].split('\n');
    expect(lines.pop()).to.equal('');
    expect(lines.map((line) => JSON.parse(line))).to.deep.equal([
      { level: 'info', message: 'first', n: 1 },
      { level: 'warn', message: 'second', n: 2 },
    ]);
    logger.info({ message: 'later' });
    await nextTurn();
    await nextTurn();
    expect(writes).to.have.length(2);
    expect(JSON.parse(writes[1]).message).to.equal('later');
  });

  it('writes pending lines when closed', () => {
    const { logger, writes, transport } = recordingLogger();
    logger.info({ message: 'pending' });
    transport.close();
    expect(writes.map((text) => JSON.parse(text).message)).to.deep.equal(['pending']);
  });
});

describe('jsonLineFormat: the gateway\'s line format', () => {
  const format = (info: Record<string, unknown>) => {
    const out = jsonLineFormat().transform({ level: 'info', message: 'm', ...info } as never) as Record<string | symbol, unknown>;
    return out[Symbol.for('message')] as string;
  };

  it('writes the entry as one JSON line in its own member order, an ISO timestamp added last', () => {
    const parsed = JSON.parse(format({ request_id: 'req_1', status: 200 }));
    expect(Object.keys(parsed)).to.deep.equal(['level', 'message', 'request_id', 'status', 'timestamp']);
    expect(parsed.timestamp).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });
});
