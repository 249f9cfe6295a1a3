/**
 * What the admin API shows of a key and its month: never a secret, only the last 4 characters.
 */
import { nextUtcMonthStart } from '../store/month';
import type { KeyRecord, UsageTotals } from '../store/types';

/** A key as `GET /admin/v1/keys` lists it. */
export interface KeyView {
  id: string;
  name: string;
  /** Last 4 characters of the current secret; empty for a key config.json gives by its hash (`keySha256`). */
  last4: string;
  /**
   * `config.json` for a key declared there: its secret, name and limits follow the file (a PATCH of
   * them or a rotation is a 409 naming it); null for a key made at run time.
   */
  declaredIn: string | null;
  /** ISO 8601. */
  createdAt: string;
  status: 'active' | 'revoked';
  keyGroup: string;
  /** Requests per minute. */
  rateLimitPerMinute: number;
  /** Catalogue IDs; null means every model. */
  allowedModels: string[] | null;
  /** Credits per UTC calendar month; null means no cap. */
  monthlyCreditCap: number | null;
  /** Settled credits of the current UTC month. */
  spend: { month: string; credits: number };
  /** Budget alert thresholds, percent of the cap; null: the configured default (`alerts.thresholds`). */
  alertThresholds: number[] | null;
  /** The team the key belongs to (its member and team caps hold it too); null: none. */
  team: string | null;
  /** The member (OIDC subject) the key belongs to; null: none. */
  owner: string | null;
}

/** ISO time of 00:00 UTC on the 1st of the month after `month` (`YYYY-MM`), when its cap resets. */
export function monthResetsAt(month: string): string {
  return new Date(nextUtcMonthStart(Date.parse(`${month}-01T00:00:00.000Z`))).toISOString();
}

/** The admin view of a key, with its spend in `month`. */
export function formatKeyView(key: KeyRecord, month: string, credits: number): KeyView {
  return {
    id: key.id,
    name: key.name,
    last4: key.last4,
    declaredIn: key.declaredIn ?? null,
    createdAt: key.createdAt,
    status: key.revoked ? 'revoked' : 'active',
    keyGroup: key.keyGroup,
    rateLimitPerMinute: key.rateLimitPerMinute,
    allowedModels: key.allowedModels,
    monthlyCreditCap: key.monthlyCreditCap,
    spend: { month, credits },
    alertThresholds: key.alertThresholds ?? null,
    team: key.team ?? null,
    owner: key.owner ?? null,
  };
}

/** Usage totals of a key for one month: per model (sorted by credits, highest first) and summed. */
export function summariseUsage(rows: UsageTotals[]): { models: UsageTotals[]; totals: Omit<UsageTotals, 'model'> } {
  const models = [...rows].sort((a, b) => b.credits - a.credits || a.model.localeCompare(b.model));
  const totals = { requests: 0, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0 };
  for (const row of models) {
    totals.requests += row.requests;
    totals.inputTokens += row.inputTokens;
    totals.outputTokens += row.outputTokens;
    totals.cacheCreationInputTokens += row.cacheCreationInputTokens;
    totals.cacheReadInputTokens += row.cacheReadInputTokens;
    totals.credits += row.credits;
  }
  return { models, totals };
}
