/**
 * A load balancer on loopback, as the tests of several instances need one: an HTTP reverse proxy
 * (http-proxy) that sends each request to the next backend in rotation, round-robin. A backend is in
 * rotation while its `GET /health` answers 200, checked every `checkIntervalMs`, as a cloud load
 * balancer's health check does; what each check saw is kept, and so is every request the proxy could
 * not forward (a refused or reset connection: what a client of a real load balancer would get as a 502).
 */
import http from 'node:http';
import httpProxy from 'http-proxy';
import { listenOnLoopback } from '../../lib/http/loopback';

export interface HealthSeen {
  backend: string;
  /** HTTP status, or the connection error's code. */
  status: number | string;
  /** `status` of the JSON body, when there was one. */
  bodyStatus?: string;
}

export interface RoundRobinProxy {
  url: string;
  /** Every health check answer, in order. */
  health: HealthSeen[];
  /** Requests the proxy could not forward: backend and error code. */
  failures: Array<{ backend: string; code: string }>;
  /** Requests forwarded, per backend. */
  forwarded: Map<string, number>;
  close(): Promise<void>;
}

/**
 * Start the proxy in front of `backends` (base URLs); resolves once it has checked each backend once.
 * @param options.checkIntervalMs how often each backend's /health is read. Default 100.
 */
export async function startRoundRobinProxy(backends: string[], options: { checkIntervalMs?: number } = {}): Promise<RoundRobinProxy> {
  const interval = options.checkIntervalMs ?? 100;
  const agent = new http.Agent({ keepAlive: true });
  const proxy = httpProxy.createProxyServer({ agent, xfwd: false });
  const inRotation = new Set<string>();
  const health: HealthSeen[] = [];
  const failures: Array<{ backend: string; code: string }> = [];
  const forwarded = new Map<string, number>();
  let turn = 0;

  const check = (backend: string) => new Promise<void>((resolve) => {
    const req = http.get(`${backend}/health`, { agent: false, timeout: interval * 5 }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        let bodyStatus: string | undefined;
        try {
          bodyStatus = JSON.parse(text).status;
        } catch {
          bodyStatus = undefined;
        }
        health.push({ backend, status: res.statusCode ?? 0, bodyStatus });
        if (res.statusCode === 200) inRotation.add(backend);
        else inRotation.delete(backend);
        resolve();
      });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('health check timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => {
      health.push({ backend, status: err.code ?? 'error' });
      inRotation.delete(backend);
      resolve();
    });
  });
  await Promise.all(backends.map(check));
  const timer = setInterval(() => backends.forEach((backend) => void check(backend)), interval);

  const server = http.createServer((req, res) => {
    const live = backends.filter((backend) => inRotation.has(backend));
    if (live.length === 0) {
      failures.push({ backend: 'none', code: 'NO_BACKEND' });
      res.writeHead(503).end();
      return;
    }
    const backend = live[turn++ % live.length];
    forwarded.set(backend, (forwarded.get(backend) ?? 0) + 1);
    proxy.web(req, res, { target: backend }, (err: NodeJS.ErrnoException) => {
      failures.push({ backend, code: err.code ?? err.message });
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  const { url, close } = await listenOnLoopback(server);
  return {
    url, health, failures, forwarded,
    async close() {
      clearInterval(timer);
      await close();
      proxy.close();
      agent.destroy();
    },
  };
}
