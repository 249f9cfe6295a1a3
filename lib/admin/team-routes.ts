/**
 * The admin API's teams (issue 44), added to the admin router: `GET /teams` lists the teams config.json
 * declares (`teams[]`, lib/config/people.ts), each with its caps, policy and what its month ledger
 * (lib/store/people-caps.ts) has settled this UTC month.
 */
import type { Router } from 'express';
import type { TeamConfig } from '../config/people';
import { utcMonth, type Clock } from '../store/month';
import type { LedgerStore } from '../store/types';

export interface TeamRoutesOptions {
  store: Pick<LedgerStore, 'getTeamMonthSpend'>;
  /** The declared teams (read per request: a reload may change them). */
  teams: () => readonly TeamConfig[];
  /** Epoch ms (the current UTC month). */
  now: Clock;
}

/** Add `GET /teams` to the admin `router`: `{ month, teams: [{ ...team, declaredIn, monthSpend }] }`, by id. */
export function addTeamRoutes(router: Router, options: TeamRoutesOptions): void {
  router.get('/teams', async (_req, res) => {
    const month = utcMonth(options.now());
    const teams = await Promise.all([...options.teams()].sort((a, b) => a.id.localeCompare(b.id)).map(async (team) => ({
      ...team, declaredIn: 'config.json', monthSpend: await options.store.getTeamMonthSpend(team.id, month),
    })));
    res.json({ month, teams });
  });
}
