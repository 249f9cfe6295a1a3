/**
 * Graceful shutdown, with the real entry point in a child process (`node dist/lib/server.js`):
 * SIGTERM stops new connections, lets a long stream finish, records its usage and exits 0; a stream
 * longer than `shutdownGraceMs` is cut (with its usage so far) and the process still exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { nativeTextEvents, startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { testConfigObject, UPSTREAM_SECRET } from '../helpers/gateway';
import { nativeHeaders } from '../helpers/http-client';

const SERVER = path.resolve(__dirname, '..', '..', 'lib', 'server.js');

interface Child {
  process: ChildProcess;
  url: string;
  lines: Array<Record<string, any>>;
  exited: Promise<number | null>;
}

/** Start the gateway entry point with a temp config pointing at `upstream`; resolves once it listens. */
async function startChild(upstream: FakeUpstream, overrides: Record<string, unknown>): Promise<Child> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-shutdown-'));
  const configFile = path.join(dir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify(testConfigObject('http://127.0.0.1:1', overrides)));
  const env: NodeJS.ProcessEnv = {
    ...process.env, GATEWAY_CONFIG: configFile, UPSTREAM_URL: upstream.url, PORT: '0', TEST_UPSTREAM_API_KEY: UPSTREAM_SECRET, LOG_LEVEL: 'info',
    // The memory store's state goes beside the temp config, never into the working directory.
    GATEWAY_STATE_FILE: path.join(dir, 'state.json'),
  };
  delete env.REDIS_URL;
  const child = spawn(process.execPath, [SERVER], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, any>> = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    fs.rmSync(dir, { recursive: true, force: true });
    resolve(code);
  }));
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const text = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          const line = JSON.parse(text);
          lines.push(line);
          if (line.message === 'gateway listening') resolve(`http://127.0.0.1:${line.port}`);
        } catch {
          // not a log line
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code} before listening`)));
  });
  return { process: child, url, lines, exited };
}

/** Open a native stream; resolves when the first delta arrives, with a promise of the whole text. */
function openStream(url: string): Promise<{ rest: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL('/v1/messages', url), { method: 'POST', headers: Object.fromEntries(nativeHeaders()) });
    req.once('response', (res) => {
      let text = '';
      let resolved = false;
      const rest = new Promise<string>((done) => {
        res.once('end', () => done(text));
        res.once('error', () => done(text));
        res.once('aborted', () => done(text));
      });
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (!resolved && text.includes('content_block_delta')) {
          resolved = true;
          resolve({ rest });
        }
      });
    });
    req.once('error', reject);
    req.end(JSON.stringify({ model: 'sonnet', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }));
  });
}

function connectionRefused(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(new URL('/healthz', url), (res) => {
      res.resume();
      resolve(false);
    });
    req.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET'));
  });
}

async function waitFor<T>(find: () => T | undefined): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('timed out waiting');
}

describe('graceful shutdown (child process)', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let child: Child | undefined;
  afterEach(async () => {
    if (child && child.process.exitCode === null) child.process.kill('SIGKILL');
    await upstream?.close();
  });

  /** A stream of four deltas, `pauseMs` apart. */
  const slowStream = (pauseMs: number) => () => {
    const events = nativeTextEvents(['one ', 'two ', 'three ', 'four'], { input_tokens: 21, output_tokens: 34 });
    return { kind: 'stream' as const, events: [...events.slice(0, 4), { pauseMs }, events[4], { pauseMs }, events[5], { pauseMs }, ...events.slice(6)] };
  };

  it('SIGTERM: refuses new connections, lets the stream finish, records its usage, exits 0', async () => {
    upstream = await startFakeUpstream(slowStream(300));
    child = await startChild(upstream, { shutdownGraceMs: 10_000 });
    const { rest } = await openStream(child.url);
    child.process.kill('SIGTERM');
    await waitFor(() => child!.lines.find((l) => String(l.message).startsWith('shutting down')));
    expect(await connectionRefused(child.url)).to.equal(true);
    const text = await rest;
    expect(text).to.include('event: message_stop');
    expect(text).to.include('four');
    expect(await child.exited).to.equal(0);
    const line = child.lines.find((l) => l.message === 'request' && l.route === 'POST /v1/messages');
    expect(line).to.include({ status: 200, input_tokens: 21, output_tokens: 34 });
    expect(line).to.not.have.property('aborted');
    expect(child.lines.map((l) => l.message)).to.include('shutdown complete');
  });

  it('cuts a stream still running when shutdownGraceMs is over, settling what was streamed, and exits 0', async () => {
    upstream = await startFakeUpstream(slowStream(5_000));
    child = await startChild(upstream, { shutdownGraceMs: 300 });
    const { rest } = await openStream(child.url);
    child.process.kill('SIGTERM');
    const text = await rest;
    expect(text).to.not.include('message_stop');
    expect(await child.exited).to.equal(0);
    const line = child.lines.find((l) => l.message === 'request' && l.route === 'POST /v1/messages');
    expect(line).to.include({ aborted: true, input_tokens: 21 });
    expect(line!.output_tokens).to.be.greaterThan(0);
    expect(child.lines.some((l) => String(l.message).includes('grace period over'))).to.equal(true);
  });
});
