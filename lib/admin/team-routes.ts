/**
 * The admin API's teams (issue 44), added to the admin router:
 * - `GET /teams` (organisation admins): every team, config.json's and the admin API's
 *   (`declaredIn`), each with its caps, policy, members' own caps and what its month ledger
 *   (lib/store/people-caps.ts) has settled this UTC month;
 * - `POST /teams` (organisation admins): a new team, kept in the store (201; 409 on an id in use);
 * - `PATCH /teams/{id}`: an organisation admin changes any field but `id`; an admin of the team
 *   narrows it within its limits (lib/people/team-change-policy.ts; past them 403 naming the limit);
 *   a team config.json declares is changed there (409);
 * - `PATCH /teams/{id}/members/{subject}` `{monthlyCreditCap}`: one member's own cap (null: the team's
 *   default again), by an organisation admin or the team's admin.
 * Every change is recorded in the audit log (`team.create`, `team.update`, `team.member.cap`).
 */
import type { Request, Router } from 'express';
import { resolveTeam, TEAM_FIELDS, type TeamConfig } from '../config/people';
import { errors } from '../http/errors';
import { changedFields } from '../audit/audit-log';
import { checkMemberCap, checkTeamAdminChange } from '../people/team-change-policy';
import type { TeamDirectory } from '../people/team-directory';
import { isOrgAdmin } from '../people/roles';
import { utcMonth, type Clock } from '../store/month';
import type { TeamStore } from '../store/people-types';
import type { AuditLogStore, LedgerStore } from '../store/types';
import { actorOf, type Actor } from './actor';
import type { AdminValidators } from './admin-schemas';
import { recordAdminAudit } from './audit-routes';
import { conflict } from './key-actions';

export interface TeamRoutesOptions {
  store: Pick<LedgerStore, 'getTeamMonthSpend'> & AuditLogStore;
  /** The teams, config.json's and the admin API's (read per request). */
  directory: TeamDirectory;
  validators: AdminValidators;
  /** The catalogue's model ids, now (a team's `allowedModels` names them). */
  modelIds: () => readonly string[];
  /** `defaults.rateLimitPerMinute` (read per request). */
  defaultRateLimitPerMinute: () => number;
  /** Epoch ms (the current UTC month). */
  now: Clock;
}



/** 403 unless `actor` is an organisation admin (ADMIN_TOKEN or `auth.oidc.adminGroups`). */
function requireOrgAdmin(req: Request): Actor {
  const actor = actorOf(req);
  if (!isOrgAdmin(actor)) throw errors.forbidden(`${req.method} ${req.baseUrl}${req.path.slice(0, 100)} is for organisation admins`);
  return actor;
}

/** Whether `actor` may change team `id` (an organisation admin, or an admin of that team). */
const mayAdminister = (actor: Actor, id: string) => isOrgAdmin(actor) || (actor.kind === 'user' && actor.adminOf.includes(id));

/** Add the routes of the file's comment to the admin `router` (after its auth step). */
export function addTeamRoutes(router: Router, options: TeamRoutesOptions): void {
  const { store, directory, validators } = options;

  /** The store's team role; 409 when the store has none (a custom store: teams come from config.json only). */
  const teamStore = (): TeamStore => {
    if (!directory.store) throw conflict('this gateway\'s store keeps no teams (a custom store without the team role): declare teams in config.json');
    return directory.store;
  };
  /** 400 naming a model of `allowedModels` that is not a catalogue id. */
  const checkModels = (allowedModels: string[] | null | undefined) => {
    const unknown = (allowedModels ?? []).find((model) => !options.modelIds().includes(model));
    if (unknown !== undefined) throw errors.invalidRequest(`allowedModels: "${unknown.slice(0, 100)}" is not a catalogue model id (GET /admin/v1/models)`);
  };
  /** This instance sees a change at once (others within a second); a failed read leaves it to the next one. */
  const refreshAfterChange = () => directory.refresh().catch(() => undefined);
  const declaredInFile = (id: string) => directory.list().some((team) => team.id === id && team.declaredIn === 'config.json');
  const declaredConflict = (id: string) => conflict(`team "${id}" is declared in config.json: change it there (the file sets it)`);

  router.get('/teams', async (req, res) => {
    requireOrgAdmin(req);
    const month = utcMonth(options.now());
    const teams = await Promise.all([...directory.list()].sort((a, b) => a.id.localeCompare(b.id)).map(async (team) => ({
      ...team, monthSpend: await store.getTeamMonthSpend(team.id, month),
    })));
    res.json({ month, teams });
  });

  router.post('/teams', async (req, res) => {
    requireOrgAdmin(req);
    const body = validators.createTeam(req.body);
    checkModels(body.allowedModels);
    if (declaredInFile(body.id)) throw declaredConflict(body.id);
    const team = resolveTeam(body, 'team', new Set(options.modelIds()));
    if (!(await teamStore().createTeam(team))) throw conflict(`a team with id "${team.id}" already exists`);
    await recordAdminAudit(store, req, { action: 'team.create', object: { type: 'team', id: team.id }, team: team.id, after: { ...team } });
    await refreshAfterChange();
    res.status(201).json({ ...team, declaredIn: 'admin-api', memberCaps: {} });
  });

  router.patch('/teams/:id', async (req, res) => {
    const id = String(req.params.id);
    const actor = actorOf(req);
    const change = validators.patchTeam(req.body);
    checkModels(change.allowedModels);
    const known = directory.list().find((team) => team.id === id);
    // The store read now (not the directory's copy): the limits are checked against the team as it is.
    const current = declaredInFile(id) ? undefined : (await teamStore().readTeams()).teams.find((team) => team.id === id);
    if (!known && !current) throw errors.notFound(`no team with id "${id.slice(0, 64)}" (GET /admin/v1/teams)`);
    if (!mayAdminister(actor, id)) throw errors.forbidden(`PATCH /admin/v1/teams/${id} is for organisation admins and admins of team "${id}"`);
    if (!current) throw declaredConflict(id);
    if (!isOrgAdmin(actor)) checkTeamAdminChange(current, change, options.defaultRateLimitPerMinute());
    const next: TeamConfig = { ...current, ...change };
    if (!(await teamStore().replaceTeam(current, next))) throw conflict(`team "${id}" changed meanwhile: read it again (GET /admin/v1/teams) and retry`);
    const changed = changedFields(current, next, TEAM_FIELDS.filter((field) => change[field] !== undefined));
    await recordAdminAudit(store, req, { action: 'team.update', object: { type: 'team', id }, team: id, ...changed });
    await refreshAfterChange();
    res.json({ ...next, declaredIn: 'admin-api', memberCaps: known?.memberCaps ?? {} });
  });

  router.patch('/teams/:id/members/:subject', async (req, res) => {
    const id = String(req.params.id);
    const subject = String(req.params.subject);
    const actor = actorOf(req);
    const { monthlyCreditCap } = validators.setMemberCap(req.body);
    const team = directory.list().find((candidate) => candidate.id === id);
    if (!team) throw errors.notFound(`no team with id "${id.slice(0, 64)}" (GET /admin/v1/teams)`);
    if (!mayAdminister(actor, id)) throw errors.forbidden(`a member's cap in team "${id}" is set by organisation admins and admins of the team`);
    if (subject.length > 255) throw errors.invalidRequest('subject: at most 255 characters (a key\'s owner)');
    if (monthlyCreditCap !== null) checkMemberCap(team, monthlyCreditCap, isOrgAdmin(actor));
    const previous = await teamStore().setMemberCap(id, subject, monthlyCreditCap);
    await recordAdminAudit(store, req, {
      action: 'team.member.cap', object: { type: 'team', id }, team: id,
      before: { member: subject, monthlyCreditCap: previous }, after: { member: subject, monthlyCreditCap },
    });
    await refreshAfterChange();
    res.json({ team: id, subject, monthlyCreditCap, effectiveMonthlyCreditCap: monthlyCreditCap ?? team.memberMonthlyCreditCap });
  });
}
