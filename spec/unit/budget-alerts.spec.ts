/** Budget alert pieces without HTTP: thresholds reached, backoff, signature, and giving up after the retry window. */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { alertBackoffMs, createAlertDispatcher, MAX_ALERT_BACKOFF_MS } from '../../lib/alerts/alert-dispatcher';
import { createBudgetAlerts, reachedThresholds } from '../../lib/alerts/budget-alerts';
import type { AlertDispatcher } from '../../lib/alerts/alert-dispatcher';
import type { RequestContext } from '../../lib/pipeline/context';
import type { Response } from 'express';
import { signAlertBody, type WebhookOutcome } from '../../lib/alerts/webhook';
import { MemoryStore } from '../../lib/store/memory-store';
import { createCapturingLogger } from '../helpers/gateway';
import { waitFor } from '../helpers/webhook-receiver';

describe('budget alerts', () => {
  it('reaches a threshold exactly at its share of the cap, in credit units', () => {
    expect(reachedThresholds(0.5, 1, [50, 80, 100])).to.deep.equal([50]);
    expect(reachedThresholds(0.499999999, 1, [50, 80, 100])).to.deep.equal([]);
    expect(reachedThresholds(0.3, 0.3, [50, 80, 100])).to.deep.equal([50, 80, 100]);
    expect(reachedThresholds(0.24, 0.3, [50, 80, 100])).to.deep.equal([50, 80]);
  });

  it('backs off by doubling from the base, up to 5 minutes', () => {
    expect([1, 2, 3, 4].map((attempts) => alertBackoffMs(attempts, 5000))).to.deep.equal([5000, 10_000, 20_000, 40_000]);
    expect(alertBackoffMs(30, 5000)).to.equal(MAX_ALERT_BACKOFF_MS);
  });

  it('signs the exact body with HMAC-SHA256', () => {
    expect(signAlertBody('{"a":1}', 'k')).to.equal(crypto.createHmac('sha256', 'k').update('{"a":1}').digest('hex'));
  });

  it('retries on its clock and gives an alert up once the next try would fall past the retry window (logged)', async () => {
    let now = Date.UTC(2025, 5, 15);
    // The injected clock moves 1 ms a reading (so a retry 1 ms away comes due), and 20 minutes an attempt.
    const store = new MemoryStore(() => now);
    const { logger, lines } = createCapturingLogger();
    const attempts: number[] = [];
    const send = async (): Promise<WebhookOutcome> => {
      attempts.push(now);
      now += 20 * 60_000; // each failed attempt "takes" 20 minutes of the injected clock
      return { kind: 'retry', reason: 'status 503' };
    };
    await store.claimBudgetAlert({ id: 'k1:2025-06:50', keyId: 'k1', keyName: 'K', threshold: 50, spent: 5, cap: 10, month: '2025-06', crossedAt: now });
    const dispatcher = createAlertDispatcher({
      store, logger, url: 'http://127.0.0.1:9/unused', secret: 's', clock: () => now++, timeoutMs: 1000, retryBaseDelayMs: 1, retryForMs: 3_600_000, pollIntervalMs: 10, send,
    });
    try {
      await waitFor(() => lines.some((line) => line.message === 'budget alert given up'), 5000, 'giving up');
    } finally {
      await dispatcher.close();
    }
    expect(attempts).to.have.length(3);
    expect(lines.find((line) => line.message === 'budget alert given up')).to.include({ alert_id: 'k1:2025-06:50', attempts: 3, reason: 'status 503' });
    expect(await store.leaseBudgetAlert(now + 10 * 3_600_000, 1000)).to.equal(null);
  });

  it('claims a team\'s thresholds of its cap once each, from its month ledger, after a team key\'s settlement', async () => {
    const now = Date.UTC(2025, 5, 15);
    const store = new MemoryStore(() => now);
    let kicks = 0;
    const step = createBudgetAlerts({
      store, dispatcher: { kick: () => (kicks += 1) } as unknown as AlertDispatcher, clock: () => now, defaultThresholds: () => [50, 80, 100],
      teams: () => [{ id: 'core', name: 'Core', oidcGroups: [], adminGroups: [], monthlyCreditCap: 10, memberMonthlyCreditCap: null, allowedModels: null, rateLimitPerMinute: null }],
    });
    const key = { id: 'alice-1', name: 'Alice', team: 'core', owner: 'alice', monthlyCreditCap: null } as RequestContext['key'];
    const settle = async (credits: number) => {
      const held = await store.reserveCredits('alice-1', '2025-06', credits, null, 60_000, undefined, undefined, { team: 'core', owner: 'alice', teamCap: 10, memberCap: null });
      if (!held.ok) throw new Error('refused');
      await store.settleCredits(held.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits });
      await step({ key, settledMonth: '2025-06' } as RequestContext, {} as Response);
    };
    await settle(4);
    expect(kicks, 'under 50 % of the team cap').to.equal(0);
    await settle(4.5);
    await settle(0.1);
    expect(kicks, '50 and 80 % claimed once each').to.equal(2);
    const first = await store.leaseBudgetAlert(now, 1000);
    expect(first!.alert).to.deep.include({ id: 'team:core:2025-06:50', team: 'core', keyId: 'alice-1', cap: 10, spent: 8.5, threshold: 50 });
  });
});
