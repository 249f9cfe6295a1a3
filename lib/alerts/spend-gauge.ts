/**
 * The Prometheus gauge `gateway_key_credit_cap_used_ratio{key_id}`: each capped key's settled credits
 * of the current UTC month as a share of its monthly credit cap (1 = the cap is reached). Read from
 * the store when scraped, so every instance reports the same figure.
 */
import client from 'prom-client';
import type { Clock } from '../store/month';
import { utcMonth } from '../store/month';
import type { KeyStore, LedgerStore } from '../store/types';

export const SPEND_GAUGE_NAME = 'gateway_key_credit_cap_used_ratio';

/** Register the gauge on `registry` (once: a registry shared by several routers keeps the first). */
export function registerSpendGauge(registry: client.Registry, store: KeyStore & LedgerStore, clock: Clock): void {
  if (registry.getSingleMetric(SPEND_GAUGE_NAME)) return;
  new client.Gauge({
    name: SPEND_GAUGE_NAME,
    help: "Each capped key's settled credits this UTC month as a share of its monthly credit cap.",
    labelNames: ['key_id'],
    registers: [registry],
    async collect() {
      this.reset();
      const month = utcMonth(clock());
      try {
        const keys = (await store.listKeys()).filter((key) => key.monthlyCreditCap !== null && key.monthlyCreditCap > 0 && !key.revoked);
        const spends = await Promise.all(keys.map((key) => store.getMonthSpend(key.id, month)));
        keys.forEach((key, i) => this.set({ key_id: key.id }, spends[i] / key.monthlyCreditCap!));
      } catch {
        // Store unreachable: the scrape goes on without this gauge's values (/health reports the outage).
      }
    },
  });
}
