/** The bench's one-at-a-time probes (bench/measure.ts): a failed reply stops the run with what came back. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { probeTogether } from '../../bench/measure';
import type { BenchRequest } from '../../bench/scenarios';

const request = (path: string): BenchRequest => ({ path, headers: { 'content-type': 'application/json' }, body: '{}' });

describe('bench probes (probeTogether)', () => {
  let server: http.Server;
  let baseUrl: string;

  beforeEach(async () => {
    server = http.createServer((req, res) => {
      req.resume().once('end', () => {
        if (req.url === '/fail') return res.writeHead(500).end('no');
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('rejects on a reply that is not a 200', async () => {
    const failed = await probeTogether(baseUrl, [request('/fast'), request('/fail')], 2).then(() => null, (err: Error) => err);
    expect(failed?.message).to.match(/\/fail -> 500/);
  });
});
