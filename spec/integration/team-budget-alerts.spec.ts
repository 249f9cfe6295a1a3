/**
 * A team's budget alerts at its cap used up, end to end on both stores: the team's ledger stops short
 * of its cap (no request passes a cap), so the 100 % alert fires when a team key is refused and what
 * the team's ledger leaves cannot pay the smallest request, whichever cap (team or member) refused it;
 * once per team and month, to a webhook receiver on 127.0.0.1. A member refused at their own cap while
 * the team has credit left fires nothing for the team.
 */
import { expect } from 'chai';
import { createCatalogue } from '../../lib/config/catalogue';
import { parseConfig } from '../../lib/config';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { boundInputTokens, priceWorstCase } from '../../middleware/credit-reservation';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, testConfigObject, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { startWebhookReceiver, waitFor, type WebhookReceiver } from '../helpers/webhook-receiver';

const SECRET = 'alerts-webhook-secret-for-tests';
const ALICE = 'sk-cs4-test-alerts-alice-0044';
const BOB = 'sk-cs4-test-alerts-bob-00044';
/** 2850 input tokens of model-sonnet-4.6 (3 credits per million): 0.00855 credits a request. */
const COST = 0.00855;
const handler: FakeHandler = (request) => ({ kind: 'json', body: nativeMessage('ok', { input_tokens: 2850, output_tokens: 0 }, request.body?.model) });

/** What the credit step prices the smallest request at (a 64-byte body, a minimal reply) on model-sonnet-4.6. */
function smallestRequestCredits(): number {
  const config = parseConfig(testConfigObject('http://127.0.0.1:9'), {});
  return priceWorstCase(createCatalogue(config).resolve('sonnet')!, boundInputTokens(64, config.reservation), config.reservation.minOutputTokens);
}

/** A native request of `secret`; resolves with its status and `x-gateway-limit`. */
async function send(gw: TestGateway, secret: string): Promise<{ status: number; limit: string | undefined }> {
  const reply = await rawRequest(gw.url, {
    method: 'POST', path: '/v1/messages', headers: nativeHeaders(secret),
    body: { model: 'sonnet', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  });
  return { status: reply.status, limit: reply.headers['x-gateway-limit'] as string | undefined };
}

/** Wait for the settlement and alert steps that run after a reply (and for any alert they queue to be sent). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

for (const storeKind of ['memory', 'redis'] as const) describe(`team budget alerts at the team cap used up (${storeKind} store)`, function () {
  this.timeout(30_000);
  const smallest = smallestRequestCredits();
  let receiver: WebhookReceiver;
  let gw: TestGateway;
  let prefix: string;

  async function start(team: Record<string, unknown>): Promise<void> {
    gw = await startTestGateway({
      handler, store: storeKind === 'redis' ? await connectTestRedisStore(prefix) as GatewayStore : undefined,
      env: { ALERTS_WEBHOOK_SECRET: SECRET },
      overrides: {
        alerts: { webhookUrl: receiver.url, retryBaseDelayMs: 30, pollIntervalMs: 50, timeoutMs: 2000 },
        teams: [{ id: 'core', name: 'Core', ...team }],
        keys: [
          { id: 'alice-1', key: ALICE, team: 'core', owner: 'alice', rateLimitPerMinute: 1000 },
          { id: 'bob-1', key: BOB, team: 'core', owner: 'bob', rateLimitPerMinute: 1000 },
        ],
      },
    });
  }
  /** The delivered alerts of team `core`, as [threshold, deliveries]. */
  const teamAlerts = () => [...receiver.delivered()].filter(([id]) => id.startsWith('team:core:'))
    .map(([id, calls]) => [Number(id.split(':').pop()), calls.length]).sort((a, b) => a[0] - b[0]);

  beforeEach(async () => {
    prefix = uniqueRedisPrefix('team-alerts');
    receiver = await startWebhookReceiver(SECRET);
  });
  afterEach(async () => {
    await gw?.close();
    await receiver.close();
    if (storeKind === 'redis') await deleteRedisPrefix(prefix);
  });

  it('a team key refused by its team cap used up sends the 100 % team alert once; a second refusal sends nothing', async () => {
    // One request's spend leaves half the smallest request's price: about 71 % of the cap, never 100 % by settlement.
    const cap = COST + smallest / 2;
    await start({ monthlyCreditCap: cap });
    expect((await send(gw, ALICE)).status).to.equal(200);
    await waitFor(() => teamAlerts().length === 1, 10_000, 'the 50 % team alert');
    const first = await send(gw, ALICE);
    expect(first).to.deep.equal({ status: 402, limit: 'team' });
    const month = utcMonth(Date.now());
    const hundred = `team:core:${month}:100`;
    await waitFor(() => receiver.delivered().has(hundred), 10_000, 'the 100 % team alert');
    const [delivered] = receiver.delivered().get(hundred)!;
    expect(delivered.signatureValid).to.equal(true);
    expect(delivered.body).to.deep.include({ type: 'budget_alert', id: hundred, keyId: 'alice-1', team: 'core', threshold: 100, cap, month });
    expect(delivered.body.spent).to.be.closeTo(COST, 1e-12);

    expect(await send(gw, BOB)).to.deep.equal({ status: 402, limit: 'team' });
    expect(await send(gw, ALICE)).to.deep.equal({ status: 402, limit: 'team' });
    await settle();
    expect(teamAlerts()).to.deep.equal([[50, 1], [80, 1], [100, 1]]);
    expect(receiver.calls.filter((call) => call.body.threshold === 100)).to.have.length(1);
  });

  it('a member refused at their cap: no team alert while the team has credit left; the 100 % team alert once its ledger is used up too', async () => {
    // Each member's cap leaves a quarter of the smallest request after one request; the team's a half
    // after two (one request is about 42 % of it, two 83 %).
    await start({ monthlyCreditCap: 2 * COST + smallest / 2, memberMonthlyCreditCap: COST + smallest / 4 });
    expect((await send(gw, ALICE)).status).to.equal(200);
    expect(await send(gw, ALICE)).to.deep.equal({ status: 402, limit: 'member' });
    await settle();
    expect(teamAlerts(), 'the team has more than a request left').to.deep.equal([]);

    expect((await send(gw, BOB)).status).to.equal(200);
    await waitFor(() => teamAlerts().length === 2, 10_000, 'the 50 and 80 % team alerts');
    expect(await send(gw, BOB)).to.deep.equal({ status: 402, limit: 'member' });
    await waitFor(() => teamAlerts().length === 3, 10_000, 'the 100 % team alert');
    expect(await send(gw, ALICE)).to.deep.equal({ status: 402, limit: 'member' });
    await settle();
    expect(teamAlerts()).to.deep.equal([[50, 1], [80, 1], [100, 1]]);
    expect(receiver.delivered().get(`team:core:${utcMonth(Date.now())}:100`)![0].body).to.deep.include({ keyId: 'bob-1', team: 'core', threshold: 100 });
  });
});
