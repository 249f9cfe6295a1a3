/**
 * The admin API, mounted at `/admin/v1` when ADMIN_TOKEN is set: list, create, read, change, rotate
 * and revoke keys, read a key's usage, read the catalogue. Every change is one store call, so it holds
 * on the next API request of every instance sharing the store, and is recorded in the audit log
 * (audit-routes.ts: who, what, the fields before and after, from which address; never a secret) and
 * in one log line. `GET /upstreams` shows the upstream targets' health; `GET /audit` the audit log.
 *
 * Errors are GatewayErrors, rendered by the gateway's error handler in its native shape:
 * `{"type":"error","error":{"type","message"},"request_id"}`.
 */
import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Catalogue } from '../config/catalogue';
import type { TeamConfig } from '../config/people';
import { errors } from '../http/errors';
import type { Logger } from '../observability/logger';
import { DEFAULT_KEY_GROUP } from '../config/key-groups';
import { DeclaredKeyError } from '../store/declared-keys';
import { restoreApiKey, setKeyLimits } from '../store/key-admin';
import { isUtcMonth, systemClock, utcMonth, type Clock } from '../store/month';
import type { PeopleStore } from '../store/people-types';
import type { AuditLogStore, KeyPatch, KeyRecord, KeyStore, LedgerStore, RequestLogStore } from '../store/types';
import { changedFields } from '../audit/audit-log';
import { addAuditRoutes } from './audit-routes';
import type { KeyGroupUpstreamStatus } from '../upstream';
import { mapBodyParserError } from '../../middleware/json-body';
import { applyTeamPolicy } from '../people/team-policy';
import { isOrgAdmin, mayManageKey } from '../people/roles';
import type { Sessions } from '../people/sessions';
import { actorOf, type Actor } from './actor';
import { createAdminAuth, createAdminAuthLimit } from './admin-auth';
import { checkAllowedModels, createAdminValidators } from './admin-schemas';
import { createKeyActions, conflict, sortThresholds } from './key-actions';
import { formatKeyView, monthResetsAt, summariseUsage } from './key-view';
import { addSelfServiceRoutes, requireTeam } from './self-service-routes';
import { addSpendRoutes } from './spend-routes';
import { addTeamRoutes } from './team-routes';
import { createTeamDirectory, type TeamDirectory } from '../people/team-directory';
import { daysOfMonth, sumByDay } from './usage-query';

export interface AdminRouterOptions {
  store: KeyStore & LedgerStore & RequestLogStore & AuditLogStore;
  catalogue: Catalogue;
  /** Alias -> canonical catalogue ID, shown next to each model (read per request: the config may be reloaded). */
  aliases: () => Readonly<Record<string, string>>;
  logger: Logger;
  /** The ADMIN_TOKEN a request may carry as a bearer token; null: sign-in only (`auth.oidc`). */
  adminToken: string | null;
  /** Rate limit of a key created without one, requests per minute (read per request). */
  defaultRateLimitPerMinute: () => number;
  /** Clock, epoch ms (the current UTC month and rotation expiries). Default: the real clock. */
  clock?: Clock;
  /** Budget alert defaults for `GET /keys` (read per request). Default: [50, 80, 100], no webhook. */
  alerts?: () => { thresholds: readonly number[]; webhookConfigured: boolean };
  /** Each key group's upstream targets with their state, for `GET /upstreams`. Default: none listed. */
  upstreams?: () => KeyGroupUpstreamStatus[];
  /** Signed-in users (only when `auth.oidc` is set): sessions, the people store, the teams now. */
  people?: { sessions: Sessions; store: PeopleStore; teams: () => readonly TeamConfig[] };
  /** The teams (config `teams[]`, read per request) for `GET /usage?groupBy=user|team` and keys' `team`. Default: `teamDirectory`'s, else `people.teams`, else none. */
  teams?: () => readonly TeamConfig[];
  /** The teams, config.json's and the admin API's (`/teams`, lib/people/team-directory.ts). Default: one over `teams` alone (no team can be made). */
  teamDirectory?: TeamDirectory;
}

/** Largest admin request body, in bytes. */
const BODY_LIMIT_BYTES = 64 * 1024;

/** Admin bodies: JSON when present (415 otherwise); no body at all is read as absent. */
function createAdminJsonBody(): RequestHandler {
  const parse = express.json({ limit: BODY_LIMIT_BYTES, strict: false, type: () => true });
  return (req, res, next) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody) return next();
    if (!/^\s*application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
      return next(errors.unsupportedMediaType('admin request bodies must have content-type: application/json'));
    }
    parse(req, res, (err?: unknown) => next(err ? mapBodyParserError(err as { type?: string }, BODY_LIMIT_BYTES) : undefined));
  };
}

/** 403 for a route only organisation admins may use. */
const forbidden = (req: Request) => errors.forbidden(`${req.method} ${req.baseUrl}${req.path.slice(0, 100)} is for organisation admins`);

/** Build the admin router. Mount it at `/admin/v1` only when an admin token is configured. */
export function createAdminRouter(options: AdminRouterOptions): Router {
  const { store, catalogue, logger } = options;
  const now = options.clock ?? systemClock;
  const validators = createAdminValidators();
  const actions = createKeyActions({ store, catalogue, logger, now });
  const teamDirectory = options.teamDirectory ?? createTeamDirectory({ fileTeams: () => options.teams?.() ?? options.people?.teams() ?? [] });
  const teams = () => teamDirectory.list();
  const router = Router({ strict: false });

  /** The team `id` a key is put in; 400 naming `team` when there is no such team. */
  const teamNamed = (id: string): TeamConfig => {
    const team = teams().find((candidate) => candidate.id === id);
    if (!team) throw errors.invalidRequest(`team: "${id.slice(0, 64)}" is not a team (GET /admin/v1/teams)`);
    return team;
  };

  /** The key `id` if `actor` may see it; 404 otherwise (another's key is not named to a member). */
  const requireKey = async (actor: Actor, id: string): Promise<KeyRecord> => {
    const key = await store.getKey(id);
    if (!key || !mayManageKey(actor, key)) throw errors.notFound(`no key with id "${id.slice(0, 100)}"`);
    return key;
  };

  router.use((_req, res, next) => {
    // Replies may hold a secret shown once: no cache may keep them.
    res.setHeader('cache-control', 'no-store');
    next();
  });
  router.use(createAdminAuthLimit({ token: options.adminToken }), createAdminAuth({ token: options.adminToken, sessions: options.people?.sessions }));
  router.use(createAdminJsonBody());

  router.get('/keys', async (req, res) => {
    const month = utcMonth(now());
    const actor = actorOf(req);
    const keys = (await store.listKeys()).filter((key) => mayManageKey(actor, key));
    keys.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    const data = await Promise.all(keys.map(async (key) => formatKeyView(key, month, await store.getMonthSpend(key.id, month))));
    const alerts = options.alerts?.() ?? { thresholds: [50, 80, 100], webhookConfigured: false };
    res.json({ data, month, monthResetsAt: monthResetsAt(month), alerts: { defaultThresholds: alerts.thresholds, webhookConfigured: alerts.webhookConfigured } });
  });

  // An org admin creates any key; a team admin a key of a team they administer, within its policy
  // (refused with 403 naming the limit). Either way a key in a team is bounded by its policy.
  router.post('/keys', async (req, res) => {
    const actor = actorOf(req);
    const body = validators.createKey(req.body);
    const team = body.team === undefined || body.team === null ? null : teamNamed(body.team);
    if (!isOrgAdmin(actor)) {
      if (!team || actor.kind !== 'user' || !actor.adminOf.includes(team.id)) {
        throw errors.forbidden('a team admin creates keys of a team they administer: give "team" (GET /admin/v1/me)');
      }
      applyTeamPolicy(team, body, 'refuse', options.defaultRateLimitPerMinute());
    }
    const rateLimitPerMinute = body.rateLimitPerMinute ?? team?.rateLimitPerMinute ?? options.defaultRateLimitPerMinute();
    const limits = team ? applyTeamPolicy(team, { allowedModels: body.allowedModels ?? null, monthlyCreditCap: body.monthlyCreditCap ?? null }, 'bound') : {};
    res.status(201).json(await actions.create(req, { ...body, ...limits, rateLimitPerMinute, team: team?.id ?? null, owner: body.owner ?? null }));
  });

  router.get('/keys/:id', async (req, res) => {
    res.json(await actions.viewOf(await requireKey(actorOf(req), String(req.params.id))));
  });

  router.patch('/keys/:id', async (req, res) => {
    const id = String(req.params.id);
    const actor = actorOf(req);
    const current = await requireKey(actor, id);
    const patch: KeyPatch = validators.patchKey(req.body);
    if (patch.alertThresholds) patch.alertThresholds = sortThresholds(patch.alertThresholds);
    checkAllowedModels(patch.allowedModels, actions.modelIdsOf(current.keyGroup), current.keyGroup);
    // Below an org admin, a key changes only within its team's policy (a key of no team: not at all),
    // and stays in its team.
    if (!isOrgAdmin(actor)) {
      if (patch.team !== undefined || patch.owner !== undefined) {
        throw errors.forbidden('team and owner of a key are changed by organisation admins only');
      }
      applyTeamPolicy(requireTeam(teams(), current.team ?? ''), patch, 'refuse', options.defaultRateLimitPerMinute());
    }
    // A key in a team (now or by this change) keeps within its team's policy: what it changes is bounded too.
    const teamId = patch.team === undefined ? current.team : patch.team;
    const team = teamId === null || teamId === undefined ? undefined : teamNamed(teamId);
    if (team) {
      const bounded = applyTeamPolicy(team, { allowedModels: patch.allowedModels !== undefined ? patch.allowedModels : current.allowedModels,
        monthlyCreditCap: patch.monthlyCreditCap !== undefined ? patch.monthlyCreditCap : current.monthlyCreditCap }, 'bound');
      // Given, or changed by the policy (unchanged fields stay out: config.json sets them on a declared key).
      if (patch.allowedModels !== undefined || JSON.stringify(bounded.allowedModels) !== JSON.stringify(current.allowedModels)) patch.allowedModels = bounded.allowedModels;
      if (patch.monthlyCreditCap !== undefined || bounded.monthlyCreditCap !== current.monthlyCreditCap) patch.monthlyCreditCap = bounded.monthlyCreditCap;
    }
    const key = await setKeyLimits(store, id, patch);
    await actions.audit(req, 'key.update', key, changedFields(current, key, Object.keys(patch)));
    res.json(await actions.viewOf(key));
  });

  router.post('/keys/:id/rotate', async (req, res) => {
    const current = await requireKey(actorOf(req), String(req.params.id));
    const { gracePeriodSeconds } = validators.rotateKey(req.body ?? {});
    res.json(await actions.rotate(req, current, gracePeriodSeconds));
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const current = await requireKey(actorOf(req), String(req.params.id));
    validators.revokeKey(req.body ?? {});
    res.json(await actions.revoke(req, current));
  });

  // Undo a revocation: the key's secrets work again as they were (an expired rotated one stays expired).
  router.post('/keys/:id/restore', async (req, res) => {
    const id = String(req.params.id);
    const current = await requireKey(actorOf(req), id);
    validators.revokeKey(req.body ?? {});
    const key = current.revoked ? await restoreApiKey(store, id) : current;
    if (current.revoked) await actions.audit(req, 'key.restore', key, { before: { revoked: true }, after: { revoked: key.revoked } });
    res.json(await actions.viewOf(key));
  });

  router.get('/keys/:id/usage', async (req, res) => {
    const id = String(req.params.id);
    const key = await requireKey(actorOf(req), id);
    const monthParam = req.query.month;
    if (monthParam !== undefined && (typeof monthParam !== 'string' || !isUtcMonth(monthParam))) {
      throw errors.invalidRequest('month: must be a UTC calendar month written YYYY-MM, e.g. 2025-07');
    }
    const month = (monthParam as string | undefined) ?? utcMonth(now());
    const [monthRows, dayRows] = await Promise.all([store.getUsage(id, month), store.getDailyUsage(id, month)]);
    const { models, totals } = summariseUsage(monthRows);
    const days = sumByDay(dayRows, daysOfMonth(month));
    res.json({ keyId: id, month, monthResetsAt: monthResetsAt(month), monthlyCreditCap: key.monthlyCreditCap, models, totals, days });
  });

  // Team admins change their own team here (team-routes.ts checks each caller).
  addTeamRoutes(router, {
    store, directory: teamDirectory, validators, now, defaultRateLimitPerMinute: options.defaultRateLimitPerMinute, modelIds: () => catalogue.models.map((model) => model.id),
  });
  if (options.people) addSelfServiceRoutes(router, { actions, validators, people: options.people.store, teams, defaultRateLimitPerMinute: options.defaultRateLimitPerMinute, store });
  // The audit log scopes each caller itself: a team admin reads their teams' entries (audit-routes.ts).
  addAuditRoutes(router, { store });
  // Everything below (spend, models, upstreams) is the organisation admins'.
  router.use((req, _res, next) => next(isOrgAdmin(actorOf(req)) ? undefined : forbidden(req)));
  addSpendRoutes(router, { store, now, teams });

  router.get('/models', (_req, res) => {
    const aliasesOf = (id: string) => Object.entries(options.aliases()).filter(([, target]) => target === id).map(([alias]) => alias);
    res.json({
      data: catalogue.models.map((model) => ({
        id: model.id,
        displayName: model.displayName ?? model.id,
        aliases: aliasesOf(model.id),
        keyGroup: catalogue.groupOfModel(model.id)?.id ?? DEFAULT_KEY_GROUP,
        pricing: model.pricing,
      })),
      keyGroups: catalogue.keyGroups.map((group) => ({ id: group.id, keyPrefix: group.keyPrefix, models: group.models })),
    });
  });

  // The targets' health as this instance sees it (lib/upstream/target-health.ts); `until` as ISO 8601.
  router.get('/upstreams', (_req, res) => {
    const data = (options.upstreams?.() ?? []).map((group) => ({
      ...group, targets: group.targets.map((target) => ({ ...target, until: target.until === null ? null : new Date(target.until).toISOString() })),
    }));
    res.json({ data });
  });

  router.use((req, _res, next) => {
    next(errors.notFound(`no admin route for ${req.method} ${req.baseUrl}${req.path.slice(0, 200)}; see the README, "Dashboard and admin API"`));
  });
  // What config.json sets on a key it declares is changed there, not here.
  router.use((err: unknown, _req: Request, _res: Response, next: NextFunction) => next(err instanceof DeclaredKeyError ? conflict(err.message) : err));
  return router;
}
