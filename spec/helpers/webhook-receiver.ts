/**
 * A test webhook receiver on 127.0.0.1: records every alert call (body, signature, whether the
 * signature is valid) and answers with what the test scripts (`answer`, per call).
 */
import http from 'node:http';
import { listenOnLoopback } from '../../lib/http/loopback';
import { signAlertBody } from '../../lib/alerts/webhook';

export interface ReceivedAlert {
  body: any;
  signature: string | undefined;
  signatureValid: boolean;
  /** The status the receiver answered with. */
  status: number;
}

export interface WebhookReceiver {
  url: string;
  calls: ReceivedAlert[];
  /** Calls answered 2xx, by alert id. */
  delivered(): Map<string, ReceivedAlert[]>;
  /** The status of the next answers (called with the 0-based call number). */
  answer: (call: number, body: any) => number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const calls: ReceivedAlert[] = [];
  const receiver: Partial<WebhookReceiver> = { calls, answer: () => 200 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const signature = req.headers['x-gateway-signature'] as string | undefined;
      const body = JSON.parse(raw);
      const status = receiver.answer!(calls.length, body);
      calls.push({ body, signature, signatureValid: signature === signAlertBody(raw, secret), status });
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status < 300 ? 'ok' : 'try later');
    });
  });
  const { url, close } = await listenOnLoopback(server);
  return Object.assign(receiver, {
    url: `${url}/hooks/budget`,
    delivered() {
      const byId = new Map<string, ReceivedAlert[]>();
      for (const call of calls.filter((c) => c.status < 300)) byId.set(call.body.id, [...(byId.get(call.body.id) ?? []), call]);
      return byId;
    },
    close,
  }) as WebhookReceiver;
}

/** Wait until `condition` holds (checked every 20 ms), at most `ms`. */
export async function waitFor(condition: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
