/**
 * Sending one budget alert to the operator's webhook: a JSON body signed with HMAC-SHA256
 * (`x-gateway-signature`: the lowercase hex digest of the exact body bytes, keyed with
 * ALERTS_WEBHOOK_SECRET), and what the answer means for a retry.
 */
import crypto from 'node:crypto';
import type { BudgetAlert } from '../store/types';

/** The JSON body of an alert webhook: the alert, with `crossedAt` as an ISO 8601 time. */
export type AlertWebhookBody = { type: 'budget_alert' } & Omit<BudgetAlert, 'crossedAt'> & { crossedAt: string };

/** What a delivery attempt came to. */
export type WebhookOutcome = { kind: 'delivered'; status: number } | { kind: 'retry'; reason: string } | { kind: 'rejected'; reason: string };

export function formatAlertBody(alert: BudgetAlert): AlertWebhookBody {
  return {
    type: 'budget_alert', id: alert.id, keyId: alert.keyId, keyName: alert.keyName, threshold: alert.threshold,
    spent: alert.spent, cap: alert.cap, month: alert.month, crossedAt: new Date(alert.crossedAt).toISOString(),
    ...(alert.team === undefined ? {} : { team: alert.team }),
  };
}

/** Hex HMAC-SHA256 of `body` keyed with `secret`: the `x-gateway-signature` header. */
export function signAlertBody(body: string, secret: string): string {
  return crypto.createHmac('sha256', secret).update(body).digest('hex');
}

export interface SendWebhookOptions {
  url: string;
  secret: string;
  /** Time allowed for the whole call, ms. */
  timeoutMs: number;
  /** Aborts the call (gateway shutting down): the outcome is then `retry`. */
  signal?: AbortSignal;
}

/**
 * POST `alert` to the webhook. 2xx: delivered. A timeout, a connection failure, 408, 429 or 5xx:
 * retry. Anything else (4xx, a redirect, which is not followed): rejected, not retried.
 */
export async function sendAlertWebhook(alert: BudgetAlert, options: SendWebhookOptions): Promise<WebhookOutcome> {
  const body = JSON.stringify(formatAlertBody(alert));
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])];
  let status: number;
  try {
    const response = await fetch(options.url, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json', 'x-gateway-signature': signAlertBody(body, options.secret), 'user-agent': 'model-gateway-alerts' },
      body,
      signal: AbortSignal.any(signals),
    });
    status = response.status;
    await response.arrayBuffer().catch(() => undefined);
  } catch (err) {
    const name = (err as Error).name;
    return { kind: 'retry', reason: name === 'TimeoutError' ? `no answer within ${options.timeoutMs} ms` : `${name}: ${(err as Error).message}` };
  }
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  if (status === 408 || status === 429 || status >= 500) return { kind: 'retry', reason: `status ${status}` };
  return { kind: 'rejected', reason: `status ${status}` };
}
