/**
 * `GET /admin/v1/usage?groupBy=user|team` (spend-routes.ts): the usage of a range summed per member
 * (the owner of the keys, an OIDC subject) or per team, over their keys' day totals, each row with
 * its caps and what its month ledger (lib/store/people-caps.ts) has settled this UTC month.
 */
import type { TeamConfig } from '../config/people';
import { utcMonth } from '../store/month';
import type { DailyUsageTotals, KeyRecord, LedgerStore } from '../store/types';
import { UsageAccumulator, type UsageSums } from './usage-query';

/** A row of `groupBy=team`; `teamId` null: the keys in no team. */
export type TeamUsageRow = {
  teamId: string | null; teamName: string | null; monthlyCreditCap: number | null; memberMonthlyCreditCap: number | null;
  /** Credits settled on the team's ledger in the current UTC month (null for the keys in no team). */
  monthSpend: number | null; members: number; keys: number;
} & UsageSums;

/** A row of `groupBy=user`; `userId` null: the keys with no owner. One row per member of each team (a member's cap is per team). */
export type UserUsageRow = {
  userId: string | null; teamId: string | null; memberMonthlyCreditCap: number | null;
  /** Credits settled on the member's ledger in its team in the current UTC month (null outside a team or with no owner). */
  monthSpend: number | null; keys: number;
} & UsageSums;

/**
 * Sum each key's rows of the range per team or per member (team and owner), highest credits first.
 * `now`: epoch ms, whose UTC month's ledgers give `monthSpend`.
 */
export async function sumByPeople(
  store: Pick<LedgerStore, 'getTeamMonthSpend'>, perKey: Array<{ key: KeyRecord; rows: DailyUsageTotals[] }>,
  groupBy: 'user' | 'team', teams: readonly TeamConfig[], now: number,
): Promise<Array<TeamUsageRow | UserUsageRow>> {
  const month = utcMonth(now);
  const groups = new Map<string, { team: string | null; owner: string | null; sums: UsageAccumulator; keys: number; owners: Set<string> }>();
  for (const { key, rows } of perKey) {
    const team = key.team ?? null;
    const owner = key.owner ?? null;
    const id = groupBy === 'team' ? JSON.stringify([team]) : JSON.stringify([team, owner]);
    let group = groups.get(id);
    if (!group) groups.set(id, (group = { team, owner, sums: new UsageAccumulator(), keys: 0, owners: new Set() }));
    group.keys += 1;
    if (owner !== null) group.owners.add(owner);
    for (const row of rows) group.sums.add(row);
  }
  const teamOf = (id: string | null) => (id === null ? undefined : teams.find((team) => team.id === id));
  const result = await Promise.all([...groups.values()].map(async (group): Promise<TeamUsageRow | UserUsageRow> => {
    const team = teamOf(group.team);
    if (groupBy === 'team') {
      return {
        teamId: group.team, teamName: team?.name ?? null, monthlyCreditCap: team?.monthlyCreditCap ?? null,
        memberMonthlyCreditCap: team?.memberMonthlyCreditCap ?? null,
        monthSpend: group.team === null ? null : await store.getTeamMonthSpend(group.team, month),
        members: group.owners.size, keys: group.keys, ...group.sums.sums(),
      };
    }
    return {
      userId: group.owner, teamId: group.team, memberMonthlyCreditCap: team?.memberMonthlyCreditCap ?? null,
      monthSpend: group.team === null || group.owner === null ? null : await store.getTeamMonthSpend(group.team, month, group.owner),
      keys: group.keys, ...group.sums.sums(),
    };
  }));
  return result.sort((a, b) => b.credits - a.credits);
}
