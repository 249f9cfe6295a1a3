/**
 * What the admin API does to a key, shared by the organisation's key routes (`/keys`, admin-router.ts)
 * and the self-service ones (`/me/keys`, self-service-routes.ts): create, rotate and revoke through
 * the store's key administration (lib/store/key-admin.ts), each with its audit line (never a secret).
 */
import type { Request } from 'express';
import type { Catalogue } from '../config/catalogue';
import { DEFAULT_KEY_GROUP, type KeyGroupConfig } from '../config/key-groups';
import { DEFAULT_KEY_PREFIX } from '../config/key-groups';
import { errors, GatewayError } from '../http/errors';
import { DEVELOPMENT_KEY_RETIRED, retireDevelopmentKey } from '../keys/development-key';
import { randomBase62 } from '../keys/secrets';
import type { Logger } from '../observability/logger';
import { getContext } from '../pipeline/context';
import { createApiKey, revokeApiKey, rotateApiKey, setKeyLimits } from '../store/key-admin';
import { utcMonth, type Clock } from '../store/month';
import type { AuditLogStore, KeyRecord, KeyStore, LedgerStore } from '../store/types';
import { recordAdminAudit } from './audit-routes';
import { actorName, actorOf } from './actor';
import { checkAllowedModels, DEFAULT_GRACE_PERIOD_SECONDS, type CreateKeyBody } from './admin-schemas';
import { formatKeyView } from './key-view';

export interface KeyActionsOptions {
  store: KeyStore & LedgerStore & AuditLogStore;
  catalogue: Catalogue;
  logger: Logger;
  /** Epoch ms. */
  now: Clock;
}

/** A key to create: the create body's fields with the rate limit settled, and its member and team. */
export type NewKeyInput = Omit<CreateKeyBody, 'rateLimitPerMinute' | 'owner' | 'team'> & {
  rateLimitPerMinute: number;
  owner?: string | null;
  team?: string | null;
};

export const conflict = (message: string) => new GatewayError(409, 'invalid_request_error', message, { chatCode: 'conflict' });

/** Thresholds in ascending order, as they are kept. */
export const sortThresholds = (thresholds: number[]) => [...thresholds].sort((a, b) => a - b);

export type KeyActions = ReturnType<typeof createKeyActions>;

/** Build the key actions (see the file's comment). */
export function createKeyActions(options: KeyActionsOptions) {
  const { store, catalogue, logger, now } = options;

  /**
   * One audit log entry (lib/audit/) and one log line per change to `key`: who (`admin` in the log line
   * for ADMIN_TOKEN, as before sign-in existed; `admin-token` in the audit log; or the user's subject),
   * what, which key. `before`/`after` hold settings only (recordAudit strips any secret field besides).
   * Never throws: an entry the store cannot take is logged at error, and the change still answered.
   */
  const audit = async (req: Request, action: string, key: KeyRecord, change: { before?: Record<string, unknown>; after?: Record<string, unknown> } = {}) => {
    const actor = actorOf(req);
    const who = actor.kind === 'admin-token' ? 'admin' : actorName(actor);
    logger.info({ message: 'admin audit', who, action, key_id: key.id, changes: change.after ?? {}, request_id: getContext(req.res!)?.requestId });
    try {
      await recordAdminAudit(store, req, { action, object: { type: 'key', id: key.id }, team: key.team ?? null, ...change });
    } catch (err) {
      // The change is made: it is answered (a new secret shown once), and the missing entry logged, as config-audit.ts does.
      logger.error({ message: 'admin change made, but its audit log entry was not written', who, action, key_id: key.id, reason: (err as Error).message });
    }
  };

  /**
   * The key group a new key joins (default: the basic one), read from the live catalogue.
   * @throws GatewayError 400 naming the key groups when there is no such group
   */
  const requireKeyGroup = (id = DEFAULT_KEY_GROUP): KeyGroupConfig => {
    const group = catalogue.keyGroup(id);
    if (!group) throw errors.invalidRequest(`keyGroup: "${id.slice(0, 64)}" is not a key group (key groups: ${catalogue.keyGroups.map((g) => g.id).join(', ')})`);
    return group;
  };

  const viewOf = async (key: KeyRecord) => {
    const month = utcMonth(now());
    return formatKeyView(key, month, await store.getMonthSpend(key.id, month));
  };

  return {
    audit,
    viewOf,
    /** Catalogue IDs a key of `keyGroup` may be allowed (its model family), now. */
    modelIdsOf: (keyGroup: string) => catalogue.keyGroup(keyGroup)?.models ?? catalogue.models.map((model) => model.id),

    /**
     * Create a key (201 body: the key's view and its secret, shown once).
     * @throws GatewayError 400 (key group, models), 409 (id taken)
     */
    async create(req: Request, input: NewKeyInput) {
      const group = requireKeyGroup(input.keyGroup);
      checkAllowedModels(input.allowedModels, group.models, group.id);
      const id = input.id ?? `key_${randomBase62(12)}`;
      if (await store.getKey(id)) throw conflict(`a key with id "${id}" already exists`);
      const { key, secret } = await createApiKey(store, {
        id, name: input.name, rateLimitPerMinute: input.rateLimitPerMinute, allowedModels: input.allowedModels ?? null,
        monthlyCreditCap: input.monthlyCreditCap ?? null, keyGroup: group.id, keyPrefix: group.keyPrefix, owner: input.owner, team: input.team,
      });
      const created = input.alertThresholds ? await setKeyLimits(store, key.id, { alertThresholds: sortThresholds(input.alertThresholds) }) : key;
      await audit(req, 'key.create', created, { after: {
        name: key.name, keyGroup: key.keyGroup, rateLimitPerMinute: key.rateLimitPerMinute, allowedModels: key.allowedModels,
        monthlyCreditCap: key.monthlyCreditCap, ...(key.owner ? { owner: key.owner } : {}), ...(key.team ? { team: key.team } : {}),
        ...(input.alertThresholds ? { alertThresholds: created.alertThresholds } : {}),
      } });
      if (await retireDevelopmentKey(store)) logger.warn({ message: DEVELOPMENT_KEY_RETIRED, request_id: getContext(req.res!)?.requestId });
      return { key: await viewOf(created), secret };
    },

    /**
     * Issue a new secret; the current ones expire after the grace period (seconds, default 24 h).
     * @throws GatewayError 409 for a revoked key
     */
    async rotate(req: Request, current: KeyRecord, gracePeriodSeconds = DEFAULT_GRACE_PERIOD_SECONDS) {
      if (current.revoked) throw conflict(`key "${current.id}" is revoked; a revoked key cannot be rotated`);
      const at = now();
      // A new secret in the key's own group prefix.
      const prefix = catalogue.keyGroup(current.keyGroup)?.keyPrefix ?? DEFAULT_KEY_PREFIX;
      const { key, secret } = await rotateApiKey(store, current.id, gracePeriodSeconds * 1000, at, prefix);
      await audit(req, 'key.rotate', key, { after: { gracePeriodSeconds } });
      return { key: await viewOf(key), secret, previousSecretExpiresAt: new Date(at + gracePeriodSeconds * 1000).toISOString() };
    },

    /** Revoke a key (its next request on any instance gets 401); a key already revoked stays as it is. */
    async revoke(req: Request, current: KeyRecord) {
      // A declared key the file revokes is revoked at run time too, so it stays so when the file changes.
      const already = current.revoked && (!current.declaredIn || current.revokedAtRunTime === true);
      const key = already ? current : await revokeApiKey(store, current.id);
      if (!already) await audit(req, 'key.revoke', key, { before: { revoked: current.revoked }, after: { revoked: key.revoked } });
      return viewOf(key);
    },
  };
}
