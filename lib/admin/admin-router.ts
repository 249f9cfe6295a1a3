/**
 * The admin API, mounted at `/admin/v1` when ADMIN_TOKEN is set: list, create, read, change, rotate
 * and revoke keys, read a key's usage, read the catalogue. Every change is one store call, so it holds
 * on the next API request of every instance sharing the store, and writes one audit log line
 * (who "admin", what, key id; never a secret). `GET /upstreams` shows the upstream targets' health.
 *
 * Errors are GatewayErrors, rendered by the gateway's error handler in its native shape:
 * `{"type":"error","error":{"type","message"},"request_id"}`.
 */
import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Catalogue } from '../config/catalogue';
import { getContext } from '../pipeline/context';
import { errors, GatewayError } from '../http/errors';
import type { Logger } from '../observability/logger';
import { DEFAULT_KEY_PREFIX } from '../config/key-groups';
import { DEVELOPMENT_KEY_RETIRED, retireDevelopmentKey } from '../keys/development-key';
import { randomBase62 } from '../keys/secrets';
import { DEFAULT_KEY_GROUP, type KeyGroupConfig } from '../config/key-groups';
import { DeclaredKeyError } from '../store/declared-keys';
import { createApiKey, restoreApiKey, revokeApiKey, rotateApiKey, setKeyLimits } from '../store/key-admin';
import { isUtcMonth, systemClock, utcMonth, type Clock } from '../store/month';
import type { KeyPatch, KeyRecord, KeyStore, LedgerStore, RequestLogStore } from '../store/types';
import type { KeyGroupUpstreamStatus } from '../upstream';
import { mapBodyParserError } from '../../middleware/json-body';
import { createAdminAuth, createAdminAuthLimit } from './admin-auth';
import { checkAllowedModels, createAdminValidators, DEFAULT_GRACE_PERIOD_SECONDS } from './admin-schemas';
import { formatKeyView, monthResetsAt, summariseUsage } from './key-view';
import { addSpendRoutes } from './spend-routes';
import { addTeamRoutes } from './team-routes';
import { applyTeamPolicy, type TeamConfig } from '../config/people';
import { daysOfMonth, sumByDay } from './usage-query';

export interface AdminRouterOptions {
  store: KeyStore & LedgerStore & RequestLogStore;
  catalogue: Catalogue;
  /** Alias -> canonical catalogue ID, shown next to each model (read per request: the config may be reloaded). */
  aliases: () => Readonly<Record<string, string>>;
  logger: Logger;
  /** The ADMIN_TOKEN every request must carry as a bearer token. */
  adminToken: string;
  /** Rate limit of a key created without one, requests per minute (read per request). */
  defaultRateLimitPerMinute: () => number;
  /** Clock, epoch ms (the current UTC month and rotation expiries). Default: the real clock. */
  clock?: Clock;
  /** Budget alert defaults for `GET /keys` (read per request). Default: [50, 80, 100], no webhook. */
  alerts?: () => { thresholds: readonly number[]; webhookConfigured: boolean };
  /** Each key group's upstream targets with their state, for `GET /upstreams`. Default: none listed. */
  upstreams?: () => KeyGroupUpstreamStatus[];
  /** The teams (config `teams[]`, read per request) for `GET /teams` and `GET /usage?groupBy=user|team`. Default none. */
  teams?: () => readonly TeamConfig[];
}

/** Largest admin request body, in bytes. */
const BODY_LIMIT_BYTES = 64 * 1024;

const conflict = (message: string) => new GatewayError(409, 'invalid_request_error', message, { chatCode: 'conflict' });

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

/** Thresholds in ascending order, as they are kept. */
const sortThresholds = (thresholds: number[]) => [...thresholds].sort((a, b) => a - b);

/** Build the admin router. Mount it at `/admin/v1` only when an admin token is configured. */
export function createAdminRouter(options: AdminRouterOptions): Router {
  const { store, catalogue, logger } = options;
  const now = options.clock ?? systemClock;
  const validators = createAdminValidators();
  /**
   * The key group a new key joins (default: the basic one), read from the live catalogue.
   * @throws GatewayError 400 naming the key groups when there is no such group
   */
  const requireKeyGroup = (id = DEFAULT_KEY_GROUP): KeyGroupConfig => {
    const group = catalogue.keyGroup(id);
    if (!group) throw errors.invalidRequest(`keyGroup: "${id.slice(0, 64)}" is not a key group (key groups: ${catalogue.keyGroups.map((g) => g.id).join(', ')})`);
    return group;
  };
  /** Catalogue IDs a key of `keyGroup` may be allowed (its model family), now. */
  const modelIdsOf = (keyGroup: string) => catalogue.keyGroup(keyGroup)?.models ?? catalogue.models.map((model) => model.id);
  /** Prefix of new secrets of a key of `keyGroup`. */
  const prefixOf = (keyGroup: string) => catalogue.keyGroup(keyGroup)?.keyPrefix ?? DEFAULT_KEY_PREFIX;
  const router = Router({ strict: false });

  /** One audit line per change. `changes` holds settings only, never a secret. */
  const audit = (req: Request, action: string, keyId: string, changes: Record<string, unknown> = {}) => {
    logger.info({ message: 'admin audit', who: 'admin', action, key_id: keyId, changes, request_id: getContext(req.res!)?.requestId });
  };

  const requireKey = async (id: string): Promise<KeyRecord> => {
    const key = await store.getKey(id);
    if (!key) throw errors.notFound(`no key with id "${id.slice(0, 100)}"`);
    return key;
  };

  const viewOf = async (key: KeyRecord) => {
    const month = utcMonth(now());
    return formatKeyView(key, month, await store.getMonthSpend(key.id, month));
  };

  router.use((_req, res, next) => {
    // Replies may hold a secret shown once: no cache may keep them.
    res.setHeader('cache-control', 'no-store');
    next();
  });
  router.use(createAdminAuthLimit({ token: options.adminToken }), createAdminAuth({ token: options.adminToken }));
  router.use(createAdminJsonBody());

  router.get('/keys', async (_req, res) => {
    const month = utcMonth(now());
    const keys = await store.listKeys();
    keys.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    const data = await Promise.all(keys.map(async (key) => formatKeyView(key, month, await store.getMonthSpend(key.id, month))));
    const alerts = options.alerts?.() ?? { thresholds: [50, 80, 100], webhookConfigured: false };
    res.json({ data, month, monthResetsAt: monthResetsAt(month), alerts: { defaultThresholds: alerts.thresholds, webhookConfigured: alerts.webhookConfigured } });
  });

  /** The team named `id` (config `teams[]`), or undefined for none; 400 naming `team` when there is no such team. */
  const teamOf = (id: string | null | undefined): TeamConfig | undefined => {
    if (id === null || id === undefined) return undefined;
    const team = options.teams?.().find((candidate) => candidate.id === id);
    if (!team) throw errors.invalidRequest(`team: "${id}" is not a team (GET /admin/v1/teams)`);
    return team;
  };

  router.post('/keys', async (req, res) => {
    const body = validators.createKey(req.body);
    const group = requireKeyGroup(body.keyGroup);
    checkAllowedModels(body.allowedModels, group.models, group.id);
    const id = body.id ?? `key_${randomBase62(12)}`;
    if (await store.getKey(id)) throw conflict(`a key with id "${id}" already exists`);
    const team = teamOf(body.team);
    const limits = team ? applyTeamPolicy({ allowedModels: body.allowedModels ?? null, monthlyCreditCap: body.monthlyCreditCap ?? null }, team) : body;
    const { key, secret } = await createApiKey(store, {
      id,
      name: body.name,
      rateLimitPerMinute: body.rateLimitPerMinute ?? team?.rateLimitPerMinute ?? options.defaultRateLimitPerMinute(),
      allowedModels: limits.allowedModels ?? null,
      monthlyCreditCap: limits.monthlyCreditCap ?? null,
      keyGroup: group.id,
      keyPrefix: group.keyPrefix,
    });
    const later = { ...(body.alertThresholds ? { alertThresholds: sortThresholds(body.alertThresholds) } : {}), ...(team ? { team: team.id, owner: body.owner ?? null } : {}) };
    const created = Object.keys(later).length > 0 ? await setKeyLimits(store, key.id, later) : key;
    audit(req, 'key.create', key.id, {
      name: key.name, keyGroup: key.keyGroup, rateLimitPerMinute: key.rateLimitPerMinute, allowedModels: key.allowedModels,
      monthlyCreditCap: key.monthlyCreditCap, ...(body.alertThresholds ? { alertThresholds: created.alertThresholds } : {}),
      ...(team ? { team: team.id, owner: created.owner ?? null } : {}),
    });
    if (await retireDevelopmentKey(store)) logger.warn({ message: DEVELOPMENT_KEY_RETIRED, request_id: getContext(res)?.requestId });
    res.status(201).json({ key: await viewOf(created), secret });
  });

  router.get('/keys/:id', async (req, res) => {
    res.json(await viewOf(await requireKey(String(req.params.id))));
  });

  router.patch('/keys/:id', async (req, res) => {
    const id = String(req.params.id);
    const current = await requireKey(id);
    const patch: KeyPatch = validators.patchKey(req.body);
    if (patch.alertThresholds) patch.alertThresholds = sortThresholds(patch.alertThresholds);
    checkAllowedModels(patch.allowedModels, modelIdsOf(current.keyGroup), current.keyGroup);
    // A key in a team (now or by this change) keeps within its team's policy: what it changes is bounded too.
    const team = teamOf(patch.team === undefined ? current.team : patch.team);
    if (team) {
      const bounded = applyTeamPolicy({ allowedModels: patch.allowedModels !== undefined ? patch.allowedModels : current.allowedModels,
        monthlyCreditCap: patch.monthlyCreditCap !== undefined ? patch.monthlyCreditCap : current.monthlyCreditCap }, team);
      // Given, or changed by the policy (unchanged fields stay out: config.json sets them on a declared key).
      if (patch.allowedModels !== undefined || JSON.stringify(bounded.allowedModels) !== JSON.stringify(current.allowedModels)) patch.allowedModels = bounded.allowedModels;
      if (patch.monthlyCreditCap !== undefined || bounded.monthlyCreditCap !== current.monthlyCreditCap) patch.monthlyCreditCap = bounded.monthlyCreditCap;
    }
    const key = await setKeyLimits(store, id, patch);
    audit(req, 'key.update', id, { ...patch });
    res.json(await viewOf(key));
  });

  router.post('/keys/:id/rotate', async (req, res) => {
    const id = String(req.params.id);
    const current = await requireKey(id);
    if (current.revoked) throw conflict(`key "${id}" is revoked; a revoked key cannot be rotated`);
    const { gracePeriodSeconds = DEFAULT_GRACE_PERIOD_SECONDS } = validators.rotateKey(req.body ?? {});
    const at = now();
    // A new secret in the key's own group prefix; the current ones expire after the grace period.
    const { key, secret } = await rotateApiKey(store, id, gracePeriodSeconds * 1000, at, prefixOf(current.keyGroup));
    audit(req, 'key.rotate', id, { gracePeriodSeconds });
    res.json({
      key: await viewOf(key),
      secret,
      previousSecretExpiresAt: new Date(at + gracePeriodSeconds * 1000).toISOString(),
    });
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    const id = String(req.params.id);
    const current = await requireKey(id);
    validators.revokeKey(req.body ?? {});
    // A declared key the file revokes is revoked at run time too, so it stays so when the file changes.
    const already = current.revoked && (!current.declaredIn || current.revokedAtRunTime === true);
    const key = already ? current : await revokeApiKey(store, id);
    if (!already) audit(req, 'key.revoke', id);
    res.json(await viewOf(key));
  });

  // Undo a revocation: the key's secrets work again as they were (an expired rotated one stays expired).
  router.post('/keys/:id/restore', async (req, res) => {
    const id = String(req.params.id);
    const current = await requireKey(id);
    validators.revokeKey(req.body ?? {});
    const key = current.revoked ? await restoreApiKey(store, id) : current;
    if (current.revoked) audit(req, 'key.restore', id);
    res.json(await viewOf(key));
  });

  router.get('/keys/:id/usage', async (req, res) => {
    const id = String(req.params.id);
    const key = await requireKey(id);
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

  addSpendRoutes(router, { store, now, teams: options.teams });
  addTeamRoutes(router, { store, now, teams: options.teams ?? (() => []) });

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
