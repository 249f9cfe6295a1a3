/**
 * What a team admin may change of their own team (issue 44, "a team admin cannot raise the team's own
 * cap") and of its members' caps. An organisation admin changes any field; a team admin only narrows
 * or moves within the team's limits, and a change past them is refused with 403 naming the limit
 * (limitRefusal, team-policy.ts), never clamped.
 */
import type { TeamConfig } from '../config/people';
import { limitRefusal } from './team-policy';

/** The fields of a team change (`PATCH /admin/v1/teams/{id}`); undefined: not changed. */
export type TeamChange = Partial<Omit<TeamConfig, 'id' | 'memberCaps'>>;

/** Whether `cap` (credits; null: none) is above `limit` (null: none). */
const above = (cap: number | null, limit: number | null) => limit !== null && (cap === null || cap > limit);

/**
 * Refuse what a team admin may not change of `team`: its groups; its own cap raised (or removed);
 * its models widened; its rate limit raised past `team.rateLimitPerMinute ?? defaultRateLimit`; the
 * member cap set above the team's cap (as it stands after the change). Its name and lowered limits pass.
 * @param defaultRateLimit `defaults.rateLimitPerMinute`, requests per minute
 * @throws GatewayError 403 naming the field and the limit
 */
export function checkTeamAdminChange(team: TeamConfig, change: TeamChange, defaultRateLimit: number): void {
  for (const field of ['oidcGroups', 'adminGroups'] as const) {
    if (change[field] !== undefined) throw limitRefusal(`${field}: who belongs to team "${team.id}" is set by organisation admins`);
  }
  if (change.monthlyCreditCap !== undefined && above(change.monthlyCreditCap, team.monthlyCreditCap)) {
    throw limitRefusal(`monthlyCreditCap: team "${team.id}"'s cap is ${team.monthlyCreditCap} credits a month; a team admin may lower it, not raise or remove it`);
  }
  const teamCap = change.monthlyCreditCap !== undefined ? change.monthlyCreditCap : team.monthlyCreditCap;
  if (change.memberMonthlyCreditCap !== undefined && above(change.memberMonthlyCreditCap, teamCap)) {
    throw limitRefusal(`memberMonthlyCreditCap: at most team "${team.id}"'s cap, ${teamCap} credits a month`);
  }
  if (change.allowedModels !== undefined && team.allowedModels !== null) {
    const outside = change.allowedModels === null ? null : change.allowedModels.find((model) => !team.allowedModels!.includes(model));
    if (change.allowedModels === null || outside !== undefined) {
      throw limitRefusal(`allowedModels: team "${team.id}" allows only ${team.allowedModels.join(', ')}; a team admin may narrow its models, not widen them`);
    }
  }
  const rateLimit = team.rateLimitPerMinute ?? defaultRateLimit;
  if (change.rateLimitPerMinute !== undefined && (change.rateLimitPerMinute ?? defaultRateLimit) > rateLimit) {
    throw limitRefusal(`rateLimitPerMinute: team "${team.id}" allows at most ${rateLimit} requests per minute; a team admin may lower it, not raise it`);
  }
}

/**
 * The highest own cap of one member of `team` that its caller may set (credits per UTC month; null:
 * no bound): an organisation admin up to the team's cap; a team admin up to the member cap
 * (`memberMonthlyCreditCap`), else the team's cap.
 */
export function memberCapBound(team: TeamConfig, orgAdmin: boolean): { limit: number | null; field: 'monthlyCreditCap' | 'memberMonthlyCreditCap' } {
  if (!orgAdmin && team.memberMonthlyCreditCap !== null) return { limit: team.memberMonthlyCreditCap, field: 'memberMonthlyCreditCap' };
  return { limit: team.monthlyCreditCap, field: 'monthlyCreditCap' };
}

/**
 * Refuse a member's own cap above what its caller may set (memberCapBound).
 * @throws GatewayError 403 naming the bound
 */
export function checkMemberCap(team: TeamConfig, cap: number, orgAdmin: boolean): void {
  const bound = memberCapBound(team, orgAdmin);
  if (bound.limit !== null && cap > bound.limit) {
    const by = orgAdmin ? '' : ' set by a team admin';
    throw limitRefusal(`monthlyCreditCap: a member's own cap${by} in team "${team.id}" is at most the team's ${bound.field}, ${bound.limit} credits a month`);
  }
}
