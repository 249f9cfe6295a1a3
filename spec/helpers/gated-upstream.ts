/**
 * A native upstream that holds every reply until the test releases them, so many requests can be in
 * flight at once for as long as a test needs. Each reply is a message with the usage the test gives,
 * its output tokens at most the request's `max_tokens` (as the real API: `max_tokens` is "the maximum
 * number of tokens to generate before stopping", platform.claude.com/docs/en/api/messages).
 */
import http from 'node:http';
import { listenOnLoopback } from '../../lib/http/loopback';
import { nativeMessage } from './fake-upstream';

export interface GatedUpstream {
  url: string;
  /** Requests received so far. */
  received(): number;
  /** The `max_tokens` of each request received, in order of arrival. */
  maxTokens(): number[];
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitForReceived(count: number, timeoutMs?: number): Promise<void>;
  /** Answer every held request, and every later one at once. */
  release(): void;
  close(): Promise<void>;
}

export async function startGatedUpstream(usage: { input_tokens: number; output_tokens: number }): Promise<GatedUpstream> {
  const held: Array<() => void> = [];
  let released = false;
  let count = 0;
  const maxTokens: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count += 1;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      maxTokens.push(body.max_tokens);
      const reply = () => {
        const output = Math.min(usage.output_tokens, body.max_tokens);
        const text = JSON.stringify({ ...nativeMessage('done', { ...usage, output_tokens: output }, body.model), stop_reason: output < usage.output_tokens ? 'max_tokens' : 'end_turn' });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (released) reply();
      else held.push(reply);
    });
  });
  const { url, close } = await listenOnLoopback(server);
  return {
    url,
    received: () => count,
    maxTokens: () => [...maxTokens],
    async waitForReceived(target, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (count < target) {
        if (Date.now() > deadline) throw new Error(`only ${count} of ${target} requests reached the upstream`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    release() {
      released = true;
      for (const reply of held.splice(0)) reply();
    },
    close,
  };
}
