/**
 * Example: tag every request with the tenant named in a request header, so usage records (the
 * `onResponse` hook's record and the request's log line) can be split per tenant.
 *
 *   const tenants = createTenantTagging({ header: 'x-tenant', onRecord: (r) => ledger.push(r) });
 *   const gateway = await createGateway({ hooks: [tenants] });
 *
 * Run it: `node dist/examples/tenant-tag.js` (a gateway on PORT, default 8080, printing each record).
 */
import { createGateway, errors, type GatewayHooks, type UsageRecord } from '../lib';

export interface TenantTaggingOptions {
  /** Request header naming the tenant. Default `x-tenant`. */
  header?: string;
  /** Tenant of requests that send no header. Default `unassigned`. */
  fallback?: string;
  /** Receives each finished request's usage record, tenant tag included. */
  onRecord(record: UsageRecord & { tenant: string }): void | Promise<void>;
}

/** Tenant names: 1-64 characters of letters, digits, `.`, `_` and `-`. */
const TENANT = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Hooks: `afterAuth` reads the header and sets the `tenant` tag (a malformed value gets a 400 in the
 * route's error shape); `onResponse` hands the record, with `tenant`, to `onRecord`.
 */
export function createTenantTagging(options: TenantTaggingOptions): GatewayHooks {
  const header = (options.header ?? 'x-tenant').toLowerCase();
  const fallback = options.fallback ?? 'unassigned';
  return {
    afterAuth(ctx, req) {
      const value = req.headers[header];
      if (value === undefined) return ctx.setTag('tenant', fallback);
      if (typeof value !== 'string' || !TENANT.test(value)) {
        throw errors.invalidRequest(`header ${header} must be 1-64 characters of letters, digits, ".", "_" and "-"`);
      }
      ctx.setTag('tenant', value);
    },
    onResponse(record) {
      // Requests refused before auth (no key) never reached afterAuth: they belong to no tenant.
      if (record.tags.tenant === undefined) return;
      return options.onRecord({ ...record, tenant: record.tags.tenant });
    },
  };
}

if (require.main === module) {
  void (async () => {
    const gateway = await createGateway({
      developmentKey: true,
      hooks: createTenantTagging({ onRecord: (record) => console.log(JSON.stringify({ tenant: record.tenant, model: record.model, usage: record.usage, credits: record.credits })) }),
    });
    if (gateway.developmentKey) console.error(`development key: ${gateway.developmentKey}`);
    gateway.app.listen(gateway.config.port);
  })();
}
