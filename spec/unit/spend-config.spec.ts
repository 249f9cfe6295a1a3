/** The config sections of spend visibility: `requestLog` and `alerts`, with ALERTS_WEBHOOK_SECRET. */
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../lib/config';

const base = (extra: Record<string, unknown> = {}) => ({
  upstream: { url: 'http://127.0.0.1:9' },
  models: [{ id: 'model-a', upstreamModel: 'up-a', pricing: { inputPerMillion: 1, outputPerMillion: 2 } }],
  ...extra,
});

describe('config: request log and budget alerts', () => {
  it('defaults: 30 days of request log, no webhook, thresholds 50/80/100', () => {
    const config = parseConfig(base(), {});
    expect(config.requestLog).to.deep.equal({ retentionDays: 30, maxMemoryRecords: 100_000 });
    expect(config.alerts).to.deep.include({ webhookUrl: null, thresholds: [50, 80, 100], retryForMs: 3_600_000 });
    expect(config.alertsWebhookSecret).to.equal(null);
  });

  it('takes its own values, thresholds sorted', () => {
    const config = parseConfig(base({ requestLog: { retentionDays: 7 }, alerts: { webhookUrl: 'https://hooks.example/x', thresholds: [90, 25] } }), { ALERTS_WEBHOOK_SECRET: 's3cret' });
    expect(config.requestLog.retentionDays).to.equal(7);
    expect(config.alerts).to.deep.include({ webhookUrl: 'https://hooks.example/x', thresholds: [25, 90] });
    expect(config.alertsWebhookSecret).to.equal('s3cret');
  });

  it('refuses at start what cannot work, naming the field', () => {
    const refused: Array<[Record<string, unknown>, RegExp]> = [
      [{ requestLog: { retentionDays: 0 } }, /requestLog\.retentionDays/],
      [{ requestLog: { retentionDays: 401 } }, /requestLog\.retentionDays/],
      [{ requestLog: { keepPrompts: true } }, /requestLog: unknown field "keepPrompts"/],
      [{ alerts: { thresholds: [] } }, /alerts\.thresholds/],
      [{ alerts: { thresholds: [50, 50] } }, /alerts\.thresholds/],
      [{ alerts: { thresholds: [150] } }, /alerts\.thresholds\.0/],
      [{ alerts: { webhookUrl: 'ftp://x' } }, /alerts\.webhookUrl/],
    ];
    for (const [extra, message] of refused) expect(() => parseConfig(base(extra), {}), JSON.stringify(extra)).to.throw(ConfigError, message);
    expect(() => parseConfig(base({ alerts: { webhookUrl: 'https://hooks.example/x' } }), {})).to.throw(ConfigError, /ALERTS_WEBHOOK_SECRET/);
  });
});
