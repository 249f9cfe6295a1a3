/**
 * Roles and scopes (issue 44): `org-admin` (a group of `auth.oidc.adminGroups`, or ADMIN_TOKEN),
 * `team-admin` (a group of a team's `adminGroups`) and `member` (a group of a team's `oidcGroups`, or
 * added to the team by email). Membership is worked out at each sign-in from the provider's groups;
 * the admin API asks these functions what a caller may see and change.
 */
import type { TeamConfig } from '../config/people';
import type { Actor, Role, UserActor } from '../admin/actor';
import type { KeyRecord } from '../store/types';

/** What a user's groups make them. */
export interface Membership {
  orgAdmin: boolean;
  /** Teams the user belongs to (as a member or an admin), by id, sorted. */
  teams: string[];
  /** Teams the user administers, by id, sorted. */
  adminOf: string[];
}

const overlaps = (a: readonly string[], b: readonly string[]) => a.some((group) => b.includes(group));

/**
 * Membership from the provider's `groups`, the org-admin groups, the teams and the teams the user's
 * email was added to. A team admin is also a member of the team.
 */
export function resolveMembership(groups: readonly string[], adminGroups: readonly string[], teams: readonly TeamConfig[], emailTeams: readonly string[]): Membership {
  const adminOf = teams.filter((team) => overlaps(groups, team.adminGroups)).map((team) => team.id);
  const memberOf = teams.filter((team) => overlaps(groups, team.oidcGroups) || emailTeams.includes(team.id)).map((team) => team.id);
  return {
    orgAdmin: overlaps(groups, adminGroups),
    teams: [...new Set([...memberOf, ...adminOf])].sort(),
    adminOf: [...new Set(adminOf)].sort(),
  };
}

/** The roles of `actor`, highest first. */
export function rolesOf(actor: Actor): Role[] {
  if (actor.kind === 'admin-token') return ['org-admin'];
  const roles: Role[] = [];
  if (actor.orgAdmin) roles.push('org-admin');
  if (actor.adminOf.length > 0) roles.push('team-admin');
  if (actor.teams.length > 0 || roles.length === 0) roles.push('member');
  return roles;
}

/** Whether `actor` is an organisation admin (ADMIN_TOKEN, or a user in `auth.oidc.adminGroups`). */
export function isOrgAdmin(actor: Actor): boolean {
  return actor.kind === 'admin-token' || actor.orgAdmin;
}

/** The signed-in user of `actor`, or null for ADMIN_TOKEN. */
export function userOf(actor: Actor): UserActor | null {
  return actor.kind === 'user' ? actor : null;
}

/**
 * Whether `actor` may see and change `key`: an org admin every key; a team admin the keys of the teams
 * they administer; anyone their own keys.
 */
export function mayManageKey(actor: Actor, key: Pick<KeyRecord, 'owner' | 'team'>): boolean {
  if (isOrgAdmin(actor)) return true;
  const user = actor as UserActor;
  if (key.owner && key.owner === user.subject) return true;
  return Boolean(key.team && user.adminOf.includes(key.team));
}
