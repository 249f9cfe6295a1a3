/**
 * Budget alerts, end to end: a capped key's spend crosses its thresholds, the gateway POSTs a signed
 * webhook to a receiver on 127.0.0.1, retries it through failures, and fires each threshold once per
 * key and month, also with two instances sharing Redis and one of them stopped mid-retry. Delays are
 * the config's (`alerts.retryBaseDelayMs` 30 ms, `alerts.pollIntervalMs` 50 ms), so nothing sleeps long.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { admin, ADMIN_TOKEN } from '../helpers/admin';
import { nativeMessage, type FakeHandler } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { nativeHeaders, rawRequest } from '../helpers/http-client';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { startWebhookReceiver, waitFor, type WebhookReceiver } from '../helpers/webhook-receiver';
import { loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import { MemoryStore } from '../../lib/store/memory-store';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';

const SECRET = 'alerts-webhook-secret-for-tests';
/** 2850 input tokens of model-sonnet-4.6 (3 credits per million): 0.00855 credits a request. */
const handler: FakeHandler = (request) => ({ kind: 'json', body: nativeMessage('ok', { input_tokens: 2850, output_tokens: 0 }, request.body?.model) });
/**
 * 0.00855 crosses 50 %; 0.0171 crosses 80 and 100 %. The second request still fits beside its
 * reservation: its worst case is about 0.0069 (1102 input tokens at the 1-hour cache write price, 6
 * per million, and 16 output tokens at 15), and 0.00855 + 0.0069 <= 0.016.
 */
const CAP = 0.016;

async function start(receiver: WebhookReceiver, store?: GatewayStore): Promise<TestGateway> {
  return startTestGateway({
    handler, store, env: { ADMIN_TOKEN, ALERTS_WEBHOOK_SECRET: SECRET, METRICS_TOKEN: 'scrape-me-0123' },
    overrides: { alerts: { webhookUrl: receiver.url, retryBaseDelayMs: 30, pollIntervalMs: 50, timeoutMs: 2000 } },
  });
}

async function spend(gw: TestGateway, secret: string): Promise<void> {
  const reply = await rawRequest(gw.url, {
    method: 'POST', path: '/v1/messages', headers: nativeHeaders(secret),
    body: { model: 'sonnet', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
  });
  expect(reply.status).to.equal(200);
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

for (const storeKind of ['memory', 'redis'] as const) describe(`budget alerts (${storeKind} store)`, function () {
  this.timeout(20_000);
  let receiver: WebhookReceiver;
  let gw: TestGateway;
  let prefix: string;
  beforeEach(async () => {
    prefix = uniqueRedisPrefix('alerts-one');
    receiver = await startWebhookReceiver(SECRET);
    gw = await start(receiver, storeKind === 'redis' ? await connectTestRedisStore(prefix) : undefined);
  });
  afterEach(async () => {
    await gw.close();
    await receiver.close();
    if (storeKind === 'redis') await deleteRedisPrefix(prefix);
  });

  it('a receiver that fails twice and then answers gets each alert once, signed; each threshold fires once', async () => {
    receiver.answer = (call) => (call < 2 ? 503 : 200);
    const created = await admin(gw, 'POST', '/keys', { name: 'Search team', monthlyCreditCap: CAP });
    expect(created.body.key.alertThresholds).to.equal(null);
    await spend(gw, created.body.secret); // 55 %: crosses 50
    const month = utcMonth(Date.now());
    const fifty = `${created.body.key.id}:${month}:50`;
    await waitFor(() => receiver.delivered().has(fifty), 10_000, 'the 50 % alert');
    expect(receiver.calls.map((call) => [call.body.threshold, call.status])).to.deep.equal([[50, 503], [50, 503], [50, 200]]);
    const [delivered] = receiver.delivered().get(fifty)!;
    expect(delivered.signatureValid).to.equal(true);
    expect(delivered.body).to.deep.include({ type: 'budget_alert', id: fifty, keyId: created.body.key.id, keyName: 'Search team', threshold: 50, cap: CAP, month });
    expect(delivered.body.spent).to.be.closeTo(0.00855, 1e-12);

    await spend(gw, created.body.secret); // 109 %: crosses 80 and 100
    await waitFor(() => receiver.delivered().size === 3, 10_000, 'the 80 and 100 % alerts');
    await spend(gw, created.body.secret).catch(() => undefined); // over the cap: refused, nothing new
    await settle();
    expect([...receiver.delivered()].map(([id, calls]) => [id.split(':').pop(), calls.length])).to.deep.equal([['50', 1], ['80', 1], ['100', 1]]);
    expect(receiver.calls.every((call) => call.signatureValid)).to.equal(true);

    const metrics = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: 'Bearer scrape-me-0123' } })).text();
    expect(metrics).to.match(new RegExp(`gateway_key_credit_cap_used_ratio\\{key_id="${created.body.key.id}"\\} 1\\.06875`));
  });

  it("a key's own thresholds replace the default, and are set through the admin API", async () => {
    const created = await admin(gw, 'POST', '/keys', { name: 'Own', monthlyCreditCap: CAP, alertThresholds: [90, 25] });
    expect(created.body.key.alertThresholds).to.deep.equal([25, 90]);
    expect((await admin(gw, 'PATCH', `/keys/${created.body.key.id}`, { alertThresholds: [101] })).body.error.message).to.match(/alertThresholds/);
    expect((await admin(gw, 'GET', '/keys')).body.alerts).to.deep.equal({ defaultThresholds: [50, 80, 100], webhookConfigured: true });
    await spend(gw, created.body.secret); // 55 %: crosses 25 only
    await waitFor(() => receiver.delivered().size === 1, 10_000, 'the 25 % alert');
    await settle();
    expect(receiver.calls.map((call) => call.body.threshold)).to.deep.equal([25]);
  });
});

describe('budget alerts across a restart of a memory-store gateway', function () {
  this.timeout(20_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-alerts-state-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('an alert being retried when the gateway stops is in its state file and sent after the restart', async () => {
    const receiver = await startWebhookReceiver(SECRET);
    const file = path.join(dir, 'state.json');
    let accepting = false;
    receiver.answer = () => (accepting ? 200 : 503);
    try {
      const before = new MemoryStore();
      const first = await start(receiver, before);
      const created = await admin(first, 'POST', '/keys', { name: 'Restarted', monthlyCreditCap: CAP });
      await spend(first, created.body.secret);
      await waitFor(() => receiver.calls.length >= 2, 10_000, 'failed attempts');
      await first.close();
      saveMemoryState(before, file);

      const after = new MemoryStore();
      loadMemoryState(after, file);
      accepting = true;
      const second = await start(receiver, after);
      try {
        await waitFor(() => receiver.delivered().size === 1, 10_000, 'delivery after the restart');
        await settle();
        expect([...receiver.delivered().values()].map((calls) => calls.length)).to.deep.equal([1]);
        expect(receiver.delivered().get(`${created.body.key.id}:${utcMonth(Date.now())}:50`)![0].signatureValid).to.equal(true);
      } finally {
        await second.close();
      }
    } finally {
      await receiver.close();
    }
  });
});

describe('budget alerts across two instances sharing Redis', function () {
  this.timeout(30_000);
  const prefix = uniqueRedisPrefix('alerts');
  let receiver: WebhookReceiver;
  let first: TestGateway;
  let second: TestGateway;
  before(async () => {
    receiver = await startWebhookReceiver(SECRET);
    first = await start(receiver, await connectTestRedisStore(prefix));
    second = await start(receiver, await connectTestRedisStore(prefix));
  });
  after(async () => {
    await first?.close().catch(() => undefined);
    await second?.close();
    await receiver.close();
    await deleteRedisPrefix(prefix);
  });

  it('fires each threshold once, and an alert survives the instance retrying it being stopped', async () => {
    let accepting = false;
    receiver.answer = () => (accepting ? 200 : 503);
    const created = await admin(first, 'POST', '/keys', { name: 'Shared', monthlyCreditCap: CAP });
    const { secret, key } = created.body;
    // One request through each instance at once: 0.0171 credits, so both see 50, 80 and 100 % crossed.
    await Promise.all([spend(first, secret), spend(second, secret)]);
    await waitFor(() => new Set(receiver.calls.map((call) => call.body.threshold)).size === 3 && receiver.calls.length >= 6, 10_000, 'failed attempts');
    await first.close(); // mid-retry: its pending alerts are in Redis
    accepting = true;
    await waitFor(() => receiver.delivered().size === 3, 15_000, 'delivery by the other instance');
    await settle();
    const month = utcMonth(Date.now());
    expect([...receiver.delivered()].map(([id, calls]) => [id, calls.length]).sort()).to.deep.equal(
      [[`${key.id}:${month}:100`, 1], [`${key.id}:${month}:50`, 1], [`${key.id}:${month}:80`, 1]],
    );
    expect(receiver.calls.every((call) => call.signatureValid)).to.equal(true);
    expect(second.logLines.filter((line) => line.message === 'budget alert sent')).to.have.length(3);
  });
});
