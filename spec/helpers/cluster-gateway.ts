/**
 * A gateway on a Redis store given by environment variables (REDIS_URL or REDIS_CLUSTER_NODES, ...),
 * in front of an upstream that holds each request until the test has looked at Redis: so a test can
 * count what the gateway asked of Redis between a request's arrival and its upstream call.
 */
import http from 'node:http';
import { listenOnLoopback } from '../../lib/http/loopback';
import { nativeMessage } from './fake-upstream';
import { KEYS, startTestGateway, type TestGateway } from './gateway';

export interface GatedUpstreamTest {
  gateway: TestGateway;
  /**
   * Send one request first (the instance reads the key's record then), then `count` requests one at a
   * time; for each, `read()` before it is sent and again when the upstream holds it.
   * @returns the difference of the two readings per request
   * @throws Error when a request does not end with 200
   */
  countBeforeUpstream(read: () => Promise<number>, count: number): Promise<number[]>;
  close(): Promise<void>;
}

export async function createGatedUpstreamTest(env: Record<string, string>): Promise<GatedUpstreamTest> {
  let arrived: (() => void) | null = null;
  let gate: Promise<void> = Promise.resolve();
  const upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      arrived?.();
      await gate;
      const text = JSON.stringify(nativeMessage('held', { input_tokens: 10, output_tokens: 5 }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  const held = await listenOnLoopback(upstream);
  const gateway = await startTestGateway({ env, upstream: { url: held.url } });
  const send = async () => {
    const reply = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sonnet', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await reply.arrayBuffer();
    if (reply.status !== 200) throw new Error(`status ${reply.status}`);
  };
  /** `read()` once it gives the same figure twice 50 ms apart (the last request's settlement is done). */
  const steady = async (read: () => Promise<number>) => {
    let last = await read();
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const next = await read();
      if (next === last) return next;
      last = next;
    }
  };
  return {
    gateway,
    async countBeforeUpstream(read, count) {
      await send();
      const differences: number[] = [];
      for (let i = 0; i < count; i += 1) {
        const before = await steady(read);
        let release!: () => void;
        gate = new Promise((resolve) => (release = resolve));
        const reachedUpstream = new Promise<void>((resolve) => (arrived = resolve));
        const sent = send();
        await reachedUpstream;
        differences.push((await steady(read)) - before);
        release();
        await sent;
      }
      return differences;
    },
    async close() {
      await gateway.close();
      await held.close();
    },
  };
}
