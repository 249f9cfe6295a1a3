import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import winston from 'winston';
import { BatchedLineTransport, createLogger, jsonLineFormat, requestScope } from '../../lib/logger';

/** A logger on a BatchedLineTransport whose writes are recorded. */
function recordingLogger(): { logger: winston.Logger; writes: string[]; transport: BatchedLineTransport } {
  const writes: string[] = [];
  const transport = new BatchedLineTransport({ destination: { write: (text: string) => writes.push(text) } });
  const logger = winston.createLogger({ level: 'info', format: winston.format.json(), transports: [transport] });
  return { logger, writes, transport };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('BatchedLineTransport', () => {
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

  it('loses no line when the process exits right after logging', () => {
    const logger = path.resolve(__dirname, '..', '..', 'lib', 'logger.js');
    const script = `const l = require(${JSON.stringify(logger)}).createLogger(); ` +
      "for (let i = 0; i < 3; i++) l.info({ message: 'line', i }); process.exit(0);";
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    const lines = child.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((line) => line.i)).to.deep.equal([0, 1, 2]);
  });

  it('createLogger stamps lines logged inside a request scope with its request id', async () => {
    const writes: string[] = [];
    const logger = createLogger('info');
    logger.clear().add(new BatchedLineTransport({ destination: { write: (text: string) => writes.push(text) } }));
    requestScope.run({ requestId: 'req_abc' }, () => logger.info({ message: 'inside' }));
    logger.info({ message: 'outside' });
    await nextTurn();
    await nextTurn();
    const lines = writes.join('').trim().split('\n').map((line) => JSON.parse(line));
    expect(lines[0]).to.include({ message: 'inside', request_id: 'req_abc' });
    expect(lines[1]).to.not.have.property('request_id');
  });
});

describe('jsonLineFormat: the gateway\'s line format', () => {
  const format = (info: Record<string, unknown>) => {
    const out = jsonLineFormat().transform({ level: 'info', message: 'm', ...info } as never) as Record<string | symbol, unknown>;
    return out[Symbol.for('message')] as string;
  };

  it('writes the info as one JSON line with an ISO timestamp added last', () => {
    const line = format({ request_id: 'req_1', status: 200 });
    const parsed = JSON.parse(line);
    expect(Object.keys(parsed)).to.deep.equal(['level', 'message', 'request_id', 'status', 'timestamp']);
    expect(parsed.timestamp).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('falls back to logform\'s JSON for what JSON.stringify cannot write (BigInt, cycles)', () => {
    expect(JSON.parse(format({ big: 10n })).big).to.equal('10');
    const cyclic: Record<string, unknown> = { name: 'a' };
    cyclic.self = cyclic;
    expect(JSON.parse(format({ cyclic })).cyclic).to.deep.equal({ name: 'a', self: '[Circular]' });
  });
});
