/**
 * The admin API's routes for signed-in people (mounted only when `auth.oidc` is set):
 * - `GET /me`: the caller, their roles and teams, and the session's CSRF token (also sent back as the
 *   `x-csrf-token` header);
 * - `GET|POST /me/keys`, `POST /me/keys/{id}/rotate` and `/revoke`: a member's own keys, which belong
 *   to them (`owner`) and a team (`team`) and take the team's policy (lib/people/team-policy.ts);
 * - `GET /users`: the users who signed in (an org admin all, a team admin their teams' members);
 * - `POST /teams/{id}/members` `{email}`: that email joins the team at its next sign-in (providers
 *   without groups).
 * Key changes go through the same key actions as `/keys` (key-actions.ts).
 */
import type { Request, Router } from 'express';
import type { TeamConfig } from '../config/people';
import { errors } from '../http/errors';
import { CSRF_HEADER } from '../people/sessions';
import { applyTeamPolicy, withTeamDefaults } from '../people/team-policy';
import { isOrgAdmin, rolesOf } from '../people/roles';
import type { PeopleStore } from '../store/people-types';
import type { AuditLogStore, KeyRecord, KeyStore } from '../store/types';
import { recordAdminAudit } from './audit-routes';
import { actorOf, type UserActor } from './actor';
import type { AdminValidators } from './admin-schemas';
import type { KeyActions } from './key-actions';

export interface SelfServiceOptions {
  actions: KeyActions;
  validators: AdminValidators;
  people: PeopleStore;
  store: KeyStore & AuditLogStore;
  teams: () => readonly TeamConfig[];
  /** `defaults.rateLimitPerMinute` (read per request). */
  defaultRateLimitPerMinute: () => number;
}


/**
 * The team `id` among `teams`.
 * @throws GatewayError 400 (`notFound` false: a body's field) or 404 (a path's) naming the teams
 */
export function requireTeam(teams: readonly TeamConfig[], id: string, notFound = false): TeamConfig {
  const team = teams.find((candidate) => candidate.id === id);
  if (team) return team;
  const message = `no team with id "${id.slice(0, 64)}" (teams: ${teams.map((t) => t.id).join(', ') || 'none'})`;
  throw notFound ? errors.notFound(message) : errors.invalidRequest(message);
}

/** The signed-in user calling, or 403 for ADMIN_TOKEN (which has no own keys or teams). */
function requireUser(req: Request): UserActor {
  const actor = actorOf(req);
  if (actor.kind !== 'user') throw errors.forbidden('ADMIN_TOKEN is not a signed-in user: it has no own keys (use /admin/v1/keys)');
  return actor;
}

/** Add the routes of the file's comment to the admin router (after its auth step). */
export function addSelfServiceRoutes(router: Router, options: SelfServiceOptions): void {
  const { actions, validators, people, store } = options;

  /** The caller's own key `id`; 404 for anyone else's (a member is not told it exists). */
  const requireOwnKey = async (user: UserActor, id: string): Promise<KeyRecord> => {
    const key = await store.getKey(id);
    if (!key || key.owner !== user.subject) throw errors.notFound(`no key with id "${id.slice(0, 100)}"`);
    return key;
  };

  router.get('/me', (req, res) => {
    const actor = actorOf(req);
    const teamOf = (team: TeamConfig, user: UserActor) => ({
      id: team.id, name: team.name, role: user.adminOf.includes(team.id) ? 'team-admin' : 'member',
      allowedModels: team.allowedModels, memberMonthlyCreditCap: team.memberMonthlyCreditCap,
      rateLimitPerMinute: team.rateLimitPerMinute ?? options.defaultRateLimitPerMinute(),
    });
    if (actor.kind !== 'user') {
      res.json({ user: null, actor: 'admin-token', roles: rolesOf(actor), teams: [], csrfToken: null });
      return;
    }
    res.setHeader(CSRF_HEADER, actor.csrfToken);
    res.json({
      user: { subject: actor.subject, email: actor.email, name: actor.name, groups: actor.groups },
      roles: rolesOf(actor),
      teams: options.teams().filter((team) => actor.teams.includes(team.id)).map((team) => teamOf(team, actor)),
      csrfToken: actor.csrfToken,
    });
  });

  router.get('/me/keys', async (req, res) => {
    const user = requireUser(req);
    const keys = (await store.listKeys()).filter((key) => key.owner === user.subject);
    keys.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    res.json({ data: await Promise.all(keys.map((key) => actions.viewOf(key))) });
  });

  // A member's key: theirs, in their team (named when they have several), within the team's policy.
  router.post('/me/keys', async (req, res) => {
    const user = requireUser(req);
    const body = validators.createOwnKey(req.body ?? {});
    if (user.teams.length === 0) throw errors.forbidden('you belong to no team: a team admin or the organisation adds you to one');
    if (body.team === undefined && user.teams.length > 1) throw errors.invalidRequest(`team: you belong to several teams; name one of ${user.teams.join(', ')}`);
    const teamId = body.team ?? user.teams[0];
    if (!user.teams.includes(teamId)) throw errors.forbidden(`team: you are not a member of team "${teamId.slice(0, 64)}" (your teams: ${user.teams.join(', ')})`);
    const team = requireTeam(options.teams(), teamId);
    const limits = withTeamDefaults(team, body, options.defaultRateLimitPerMinute());
    applyTeamPolicy(team, limits, 'refuse', options.defaultRateLimitPerMinute());
    const name = body.name ?? `${user.email ?? user.subject} (${team.id})`.slice(0, 100);
    res.status(201).json(await actions.create(req, { ...body, ...limits, name, team: team.id, owner: user.subject }));
  });

  router.post('/me/keys/:id/rotate', async (req, res) => {
    const current = await requireOwnKey(requireUser(req), String(req.params.id));
    const { gracePeriodSeconds } = validators.rotateKey(req.body ?? {});
    res.json(await actions.rotate(req, current, gracePeriodSeconds));
  });

  router.post('/me/keys/:id/revoke', async (req, res) => {
    const current = await requireOwnKey(requireUser(req), String(req.params.id));
    validators.revokeKey(req.body ?? {});
    res.json(await actions.revoke(req, current));
  });

  router.get('/users', async (req, res) => {
    const actor = actorOf(req);
    const users = await people.listUsers();
    if (isOrgAdmin(actor)) return void res.json({ data: users });
    if (actor.kind !== 'user' || actor.adminOf.length === 0) throw errors.forbidden('GET /admin/v1/users is for organisation and team admins');
    res.json({ data: users.filter((user) => user.teams.some((team) => actor.adminOf.includes(team))) });
  });

  router.post('/teams/:id/members', async (req, res) => {
    const actor = actorOf(req);
    const team = requireTeam(options.teams(), String(req.params.id), true);
    if (!isOrgAdmin(actor) && !(actor.kind === 'user' && actor.adminOf.includes(team.id))) {
      throw errors.forbidden(`only an organisation admin or an admin of team "${team.id}" adds its members`);
    }
    const { email } = validators.addMember(req.body);
    await people.addTeamMemberByEmail(team.id, email);
    await recordAdminAudit(store, req, { action: 'team.member.add', object: { type: 'team', id: team.id }, team: team.id, after: { email: email.toLowerCase() } });
    res.status(201).json({ team: team.id, email: email.toLowerCase(), joinsAt: 'next sign-in' });
  });
}
