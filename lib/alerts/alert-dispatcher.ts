/**
 * Delivers the pending budget alerts of the store, on every instance: each takes the next alert due
 * with a lease (so one instance at a time tries it), sends it, and then forgets it (delivered, or
 * rejected by the receiver) or puts it back due after a backoff (timeouts, 408, 429, 5xx), for up to
 * `retryForMs` after the crossing. Since the pending alert lives in the store, an instance stopped
 * mid-retry loses nothing: another instance, or this one after a restart, takes it when it is due.
 * Delivery is at least once (an instance that dies after the receiver answered but before it could
 * forget the alert leaves it to be sent again): receivers drop repeats by the body's `id`.
 */
import type { Logger } from '../observability/logger';
import type { Clock } from '../store/month';
import type { AlertQueueStore, PendingBudgetAlert } from '../store/types';
import { sendAlertWebhook, type WebhookOutcome } from './webhook';

/** Longest backoff between two attempts: 5 minutes. */
export const MAX_ALERT_BACKOFF_MS = 5 * 60 * 1000;

export interface AlertDispatcherOptions {
  store: AlertQueueStore;
  logger: Logger;
  /** The webhook URL (config `alerts.webhookUrl`). */
  url: string;
  /** ALERTS_WEBHOOK_SECRET. */
  secret: string;
  /** Epoch ms: due times and the give-up deadline. */
  clock: Clock;
  /** Time allowed for one call, ms. */
  timeoutMs: number;
  /** First backoff, ms; doubles per attempt up to MAX_ALERT_BACKOFF_MS. */
  retryBaseDelayMs: number;
  /** How long after the crossing an alert is still tried, ms. */
  retryForMs: number;
  /** How often to look for alerts due (others' retries, alerts left by a stopped instance), ms. */
  pollIntervalMs: number;
  /** The call itself. Default: `sendAlertWebhook`. */
  send?: typeof sendAlertWebhook;
}

export interface AlertDispatcher {
  /** Look for alerts due now (after a claim). */
  kick(): void;
  /** Stop: an attempt under way is aborted and its alert put back, due at once, for another instance. */
  close(): Promise<void>;
}

/** Backoff before attempt `attempts + 1`: base × 2^(attempts − 1), at most 5 minutes. */
export function alertBackoffMs(attempts: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_ALERT_BACKOFF_MS);
}

export function createAlertDispatcher(options: AlertDispatcherOptions): AlertDispatcher {
  const { store, logger, clock } = options;
  const send = options.send ?? sendAlertWebhook;
  const leaseMs = options.timeoutMs + 5000;
  const stopping = new AbortController();
  let running: Promise<void> | null = null;
  let again = false;
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      kick();
    }, ms);
    timer.unref();
    timers.add(timer);
  };

  async function deliver(pending: PendingBudgetAlert): Promise<void> {
    const { alert } = pending;
    const line = { key_id: alert.keyId, alert_id: alert.id, threshold: alert.threshold, month: alert.month };
    const outcome: WebhookOutcome = await send(alert, { url: options.url, secret: options.secret, timeoutMs: options.timeoutMs, signal: stopping.signal });
    const attempts = pending.attempts + 1;
    if (outcome.kind === 'delivered') {
      await store.finishBudgetAlert(alert.id);
      logger.info({ message: 'budget alert sent', ...line, attempts, status: outcome.status });
      return;
    }
    if (stopping.signal.aborted) {
      // Cut by shutdown: not an attempt; due at once for whichever instance looks next.
      await store.retryBudgetAlert(pending, clock());
      return;
    }
    const delay = alertBackoffMs(attempts, options.retryBaseDelayMs);
    if (outcome.kind === 'rejected' || clock() + delay > alert.crossedAt + options.retryForMs) {
      await store.finishBudgetAlert(alert.id);
      logger.error({ message: 'budget alert given up', ...line, attempts, reason: outcome.reason });
      return;
    }
    await store.retryBudgetAlert({ alert, attempts }, clock() + delay);
    logger.warn({ message: 'budget alert delivery failed; will retry', ...line, attempts, reason: outcome.reason, retry_in_ms: delay });
    later(delay);
  }

  async function drain(): Promise<void> {
    do {
      again = false;
      for (;;) {
        if (stopping.signal.aborted) return;
        const pending = await store.leaseBudgetAlert(clock(), leaseMs);
        if (!pending) break;
        await deliver(pending);
      }
    } while (again);
  }

  function kick(): void {
    if (stopping.signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    running = drain()
      .catch((err: Error) => {
        logger.error({ message: 'budget alert delivery stopped: store unreachable; retrying at the next poll', error: err.message });
      })
      .finally(() => (running = null));
  }

  const poll = setInterval(kick, options.pollIntervalMs);
  poll.unref();
  kick();

  return {
    kick,
    async close() {
      clearInterval(poll);
      for (const timer of timers) clearTimeout(timer);
      stopping.abort();
      await running;
    },
  };
}
