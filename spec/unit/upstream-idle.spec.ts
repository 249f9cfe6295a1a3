/**
 * The reply body's idle limit (lib/upstream/attempt.ts) against a body its reader holds paused (a
 * client slow to take the stream): the pause does not count, and the limit starts again on resume.
 */
import { expect } from 'chai';
import http from 'node:http';
import { awaitReplyHead } from '../../lib/upstream/attempt';
import { listenOnLoopback } from '../../lib/http/loopback';

const IDLE_MS = 150;

/** A server that sends one chunk, waits for `release`, then sends `rest` (and ends) or nothing more. */
async function startServer(release: Promise<void>, rest: string | null) {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('first;');
    void release.then(() => (rest === null ? undefined : res.end(rest)));
  });
  return listenOnLoopback(server);
}

/** Read the reply of a GET to `url`, pausing it for `pauseMs` after its first chunk; resolves with what came, or the error that ended it. */
async function readPausing(url: string, pauseMs: number): Promise<{ body: string; error?: string }> {
  const request = http.get(url);
  const { response } = await awaitReplyHead(request, 5000, IDLE_MS);
  return new Promise((resolve) => {
    let body = '';
    response.on('data', (chunk: Buffer) => {
      body += chunk.toString();
      if (body === 'first;') {
        response.pause();
        setTimeout(() => response.resume(), pauseMs);
      }
    });
    response.once('end', () => resolve({ body }));
    response.once('error', (err: NodeJS.ErrnoException) => resolve({ body, error: err.code }));
  });
}

describe('upstream reply idle limit and a paused reader', () => {
  it('does not end a body its reader held paused longer than the limit', async () => {
    let release!: () => void;
    const server = await startServer(new Promise((resolve) => (release = resolve)), 'rest');
    try {
      const reading = readPausing(server.url, IDLE_MS * 3);
      // The upstream sends the rest while the reader still holds the body paused.
      setTimeout(release, IDLE_MS * 2);
      expect(await reading).to.deep.equal({ body: 'first;rest' });
    } finally {
      await server.close();
    }
  });

  it('ends a body that stays idle for the limit once its reader resumed', async () => {
    const server = await startServer(new Promise(() => undefined), null);
    try {
      const started = Date.now();
      const result = await readPausing(server.url, IDLE_MS * 2);
      expect(result).to.deep.equal({ body: 'first;', error: 'UPSTREAM_IDLE' });
      expect(Date.now() - started).to.be.at.least(IDLE_MS * 3 - 20);
    } finally {
      await server.close();
    }
  });
});
