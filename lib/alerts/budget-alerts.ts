/**
 * The budget alert finish step: after a capped key's request settled, its month's spend is read back
 * and every threshold it has reached (percent of the monthly credit cap: the key's own
 * `alertThresholds`, else the config's) is claimed in the store. The store lets one claim of a key,
 * month and threshold succeed, across every instance; the winner's dispatcher sends it.
 *
 * A cap is also reached when what is left of it cannot pay the smallest request (a refusal the
 * credit step marks with `capExhaustedMonth`): the spend may stop a little short of the cap, since no
 * request ever passes it, so the 100 % alert fires then.
 *
 * A team key's settlement also claims the thresholds (the config's `alerts.thresholds`) its team's
 * month ledger has reached of the team's cap (lib/store/people-caps.ts), once per team, month and
 * threshold (id `team:<team id>:<month>:<threshold>`, the alert's `team` set). The team's cap is also
 * reached when a team key is refused and what the team's ledger leaves of it cannot pay the smallest
 * request (the credit step marks such a refusal with `teamCapCheck`, whichever cap refused it): every
 * team threshold then fires, as a key's do at `capExhaustedMonth`.
 */
import type { Response } from 'express';
import type { RequestContext } from '../pipeline/context';
import type { AfterResponseStep } from '../pipeline/after-response';
import { toCreditUnits } from '../store/credits';
import type { Clock } from '../store/month';
import type { AlertQueueStore, BudgetAlert, KeyRecord, LedgerStore } from '../store/types';
import type { TeamConfig } from '../config/people';
import type { AlertDispatcher } from './alert-dispatcher';

/** Claims this process has already seen fail or succeed, not asked again (bounded: cleared when full). */
const MAX_REMEMBERED_CLAIMS = 100_000;

export interface BudgetAlertsOptions {
  store: LedgerStore & AlertQueueStore;
  dispatcher: AlertDispatcher;
  /** Thresholds of keys that set none (config `alerts.thresholds`, read per request). */
  defaultThresholds: () => readonly number[];
  clock: Clock;
  /** The teams (config `teams[]`, read per request) whose caps a team key's settlement is checked against. Default none. */
  teams?: () => readonly TeamConfig[];
}

/** The thresholds (percent) of `spent` against `cap` reached, from `thresholds`; exact in credit units. */
export function reachedThresholds(spent: number, cap: number, thresholds: readonly number[]): number[] {
  const spentUnits = toCreditUnits(spent);
  const capUnits = toCreditUnits(cap);
  return thresholds.filter((threshold) => spentUnits * 100 >= capUnits * threshold);
}

/** Build the finish hook that claims the budget alerts a settlement crossed. */
export function createBudgetAlerts(options: BudgetAlertsOptions): AfterResponseStep {
  const { store } = options;
  const claimed = new Set<string>();
  /** Claim the alert `alert` (its id not yet claimed here); a win wakes the dispatcher. */
  const claim = async (alert: BudgetAlert) => {
    const won = await store.claimBudgetAlert(alert);
    if (claimed.size >= MAX_REMEMBERED_CLAIMS) claimed.clear();
    claimed.add(alert.id);
    if (won) options.dispatcher.kick();
  };
  /**
   * The team's thresholds its month ledger has reached after a settlement of one of its keys or a
   * refusal; with `smallestCredits` (a refusal's teamCapCheck), all of them when the credit the ledger
   * leaves under the team's cap is less than that.
   */
  const claimTeamAlerts = async (key: KeyRecord, month: string, smallestCredits?: number) => {
    const team = options.teams?.().find((candidate) => candidate.id === key.team);
    const cap = team?.monthlyCreditCap ?? null;
    if (!team || cap === null || cap <= 0) return;
    const open = options.defaultThresholds().filter((threshold) => !claimed.has(`team:${team.id}:${month}:${threshold}`));
    if (open.length === 0) return;
    const spent = await store.getTeamMonthSpend(team.id, month);
    const usedUp = smallestCredits !== undefined && toCreditUnits(cap) - toCreditUnits(spent) < toCreditUnits(smallestCredits);
    for (const threshold of usedUp ? open : reachedThresholds(spent, cap, open)) {
      await claim({ id: `team:${team.id}:${month}:${threshold}`, keyId: key.id, keyName: key.name, team: team.id, threshold, spent, cap, month, crossedAt: options.clock() });
    }
  };
  return async (ctx: RequestContext, _res: Response) => {
    const key = ctx.key;
    if (key?.team && ctx.settledMonth) await claimTeamAlerts(key, ctx.settledMonth);
    else if (key?.team && ctx.teamCapCheck) await claimTeamAlerts(key, ctx.teamCapCheck.month, ctx.teamCapCheck.smallestCredits);
    const month = ctx.settledMonth ?? ctx.capExhaustedMonth;
    if (!key || !month) return;
    if (key.monthlyCreditCap === null || key.monthlyCreditCap <= 0) return;
    const thresholds = key.alertThresholds ?? options.defaultThresholds();
    const open = thresholds.filter((threshold) => !claimed.has(`${key.id}:${month}:${threshold}`));
    if (open.length === 0) return;
    const spent = await store.getMonthSpend(key.id, month);
    const reached = ctx.capExhaustedMonth === month ? open : reachedThresholds(spent, key.monthlyCreditCap, open);
    for (const threshold of reached) {
      await claim({ id: `${key.id}:${month}:${threshold}`, keyId: key.id, keyName: key.name, threshold, spent, cap: key.monthlyCreditCap, month, crossedAt: options.clock() });
    }
  };
}
