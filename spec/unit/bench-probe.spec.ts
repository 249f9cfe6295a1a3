/** The bench's one-at-a-time probes (bench/measure.ts): requests measured together take turns. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { probe, probeTogether } from '../../bench/measure';
import type { BenchRequest } from '../../bench/scenarios';

const request = (path: string): BenchRequest => ({ path, headers: { 'content-type': 'application/json' }, body: '{}' });

describe('bench probes (probe, probeTogether)', () => {
  let server: http.Server;
  let baseUrl: string;
  /** Path and client port of each request, in arrival order. */
  let seen: Array<{ path: string; port: number }>;

  beforeEach(async () => {
    seen = [];
    server = http.createServer((req, res) => {
      seen.push({ path: req.url!, port: req.socket.remotePort! });
      req.resume().once('end', () => {
        if (req.url === '/fail') return res.writeHead(500).end('no');
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first');
        // The slow path's first byte comes 20 ms after its head; the fast path's at once.
        setTimeout(() => res.end('rest'), req.url === '/slow' ? 20 : 0);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends one request of each in turn, each request on a connection of its own, and reports them in order', async () => {
    const [fast, slow] = await probeTogether(baseUrl, [request('/fast'), request('/slow')], 3);
    expect(seen.map((r) => r.path)).to.deep.equal(['/fast', '/slow', '/fast', '/slow', '/fast', '/slow']);
    const portsOf = (path: string) => new Set(seen.filter((r) => r.path === path).map((r) => r.port));
    expect(portsOf('/fast').size).to.equal(1);
    expect(portsOf('/slow').size).to.equal(1);
    expect([...portsOf('/fast')][0]).to.not.equal([...portsOf('/slow')][0]);
    expect(slow.total - fast.total).to.be.greaterThan(15);
    expect(fast.ttfb).to.be.at.most(fast.total);
  });

  it('probe is probeTogether of one request', async () => {
    const result = await probe(baseUrl, request('/fast'), 4);
    expect(seen.map((r) => r.path)).to.deep.equal(['/fast', '/fast', '/fast', '/fast']);
    expect(result.ttfb).to.be.a('number').and.not.NaN;
    expect(result.medianEventLag).to.be.NaN; // no stamped deltas in these replies
  });

  it('rejects on a reply that is not a 200', async () => {
    const failed = await probeTogether(baseUrl, [request('/fast'), request('/fail')], 2).then(() => null, (err: Error) => err);
    expect(failed?.message).to.match(/\/fail -> 500/);
  });
});
