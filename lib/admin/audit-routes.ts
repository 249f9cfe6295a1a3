/**
 * The audit log on the admin API, and how admin routes record into it:
 *
 * - `GET /audit?actor&action&objectType&objectId&team&since&until&limit&cursor[&format=json|jsonl]`:
 *   entries in the order appended (oldest first), filtered; JSON `{data, cursor}` (cursor: pass it
 *   back for the next page; null: the end), or JSON lines (`format=jsonl` or `Accept:
 *   application/x-ndjson`), streamed page by page to the end of the log (or `limit`). An organisation
 *   admin (ADMIN_TOKEN, or `auth.oidc.adminGroups`) sees every entry, a team admin only the entries of
 *   the teams they administer, a member none (403).
 * - `GET /audit/verify`: whether the hash chain is intact, or the first broken entry (organisation admins).
 */
import type { Request, Router } from 'express';
import { errors } from '../http/errors';
import { recordAudit } from '../audit/audit-log';
import { AUDIT_PAGE_ENTRIES, scanAudit, verifyAuditLog, type AuditFilter } from '../audit/audit-query';
import type { AuditActor, AuditDraft, AuditEntry, AuditLogStore } from '../audit/audit-types';
import { actorOf, type Actor } from './actor';
import { checkKnownParameters, parseChoice } from './usage-query';
import { writeWithBackpressure } from '../http/sse';

/** Entries a JSON page holds by default, and at most. */
export const AUDIT_DEFAULT_LIMIT = 100;
export const AUDIT_MAX_LIMIT = 1000;

/** How the audit log names `actor`: `admin-token`, or the user's subject and email. */
export function auditActorOf(actor: Actor): AuditActor {
  return actor.kind === 'admin-token' ? 'admin-token' : { subject: actor.subject, email: actor.email };
}

/**
 * The client's address as Express reads it: the connection's peer, since the gateway leaves `trust
 * proxy` off (a client-sent X-Forwarded-For is never believed); behind a router, the router's. Null when unknown.
 */
export function clientAddressOf(req: Request): string | null {
  return req.ip ?? req.socket?.remoteAddress ?? null;
}

/**
 * Record a change made through the admin API by the caller of `req` (its actor and address).
 * @throws Error when the store cannot append (the route's error handler answers it)
 */
export function recordAdminAudit(store: AuditLogStore, req: Request, draft: Omit<AuditDraft, 'actor' | 'ip'>): Promise<AuditEntry> {
  return recordAudit(store, { ...draft, actor: auditActorOf(actorOf(req)), ip: clientAddressOf(req) });
}


/**
 * The teams whose entries `actor` may read: null for every entry (organisation admin), the teams a
 * team admin administers.
 * @throws GatewayError 403 for a member who administers no team
 */
export function auditScopeOf(actor: Actor): readonly string[] | null {
  if (actor.kind === 'admin-token' || actor.orgAdmin) return null;
  if (actor.adminOf.length > 0) return actor.adminOf;
  throw errors.forbidden('the audit log is open to organisation admins and to team admins (their teams\' entries)');
}

type Query = Record<string, unknown>;

/** A parameter given once as a plain string. @throws GatewayError 400 */
function text(query: Query, name: string, pattern = /^.{1,256}$/s): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !pattern.test(value)) throw errors.invalidRequest(`${name}: give it once, as a plain value of 1 to 256 characters`);
  return value;
}

/** `since`/`until`: an ISO 8601 date or date-time. @returns epoch ms @throws GatewayError 400 */
function time(query: Query, name: string): number | undefined {
  const value = text(query, name);
  if (value === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw errors.invalidRequest(`${name}: "${value.slice(0, 40)}" is not an ISO 8601 date or date-time, e.g. 2026-11-01 or 2026-11-01T09:00:00Z`);
  return ms;
}

/** A whole number parameter in [min, max]. @throws GatewayError 400 */
function whole(query: Query, name: string, min: number, max: number): number | undefined {
  const value = text(query, name, /^\d{1,16}$/);
  if (value === undefined) return undefined;
  const number = Number(value);
  if (number < min || number > max) throw errors.invalidRequest(`${name}: a whole number from ${min} to ${max}`);
  return number;
}

/** The filter, page and format of a `GET /audit`. @throws GatewayError 400 naming the parameter */
export function parseAuditQuery(req: Request): { filter: AuditFilter; limit: number | undefined; cursor: number; format: 'json' | 'jsonl' } {
  const query = req.query as Query;
  checkKnownParameters(query, ['actor', 'action', 'objectType', 'objectId', 'team', 'since', 'until', 'limit', 'cursor', 'format']);
  const filter: AuditFilter = {
    actor: text(query, 'actor'), action: text(query, 'action'), objectType: text(query, 'objectType'), objectId: text(query, 'objectId'),
    team: text(query, 'team'), since: time(query, 'since'), until: time(query, 'until'),
  };
  const format = query.format === undefined && /application\/x-ndjson/i.test(req.headers.accept ?? '') ? 'jsonl' : parseChoice(query, 'format', ['json', 'jsonl'] as const);
  const limit = whole(query, 'limit', 1, format === 'json' ? AUDIT_MAX_LIMIT : Number.MAX_SAFE_INTEGER);
  return { filter, limit, cursor: whole(query, 'cursor', 0, Number.MAX_SAFE_INTEGER) ?? 0, format };
}

/** Add `GET /audit` and `GET /audit/verify` to the admin `router`. */
export function addAuditRoutes(router: Router, options: { store: AuditLogStore }): void {
  const { store } = options;

  router.get('/audit', async (req, res) => {
    const visibleTeams = auditScopeOf(actorOf(req));
    const { filter, limit, cursor, format } = parseAuditQuery(req);
    const scoped = { ...filter, visibleTeams };
    if (format === 'json') {
      const page = await scanAudit(store, scoped, cursor, limit ?? AUDIT_DEFAULT_LIMIT);
      res.json({ data: page.entries, cursor: page.cursor === null ? null : String(page.cursor) });
      return;
    }
    // JSON lines to the end of the log (or `limit`): the first page read before the head is sent, so a
    // store that cannot answer gets a real status; each page waits for the client to take the last.
    let left = limit ?? Number.MAX_SAFE_INTEGER;
    let page = await scanAudit(store, scoped, cursor, Math.min(left, AUDIT_PAGE_ENTRIES));
    res.status(200).setHeader('content-type', 'application/x-ndjson; charset=utf-8');
    try {
      for (;;) {
        left -= page.entries.length;
        if (page.entries.length > 0) await writeWithBackpressure(res, page.entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
        if (page.cursor === null || left <= 0 || res.destroyed) break;
        page = await scanAudit(store, scoped, page.cursor, Math.min(left, AUDIT_PAGE_ENTRIES));
      }
      res.end();
    } catch {
      // Mid-export the head is gone: cut the connection so the export cannot pass for complete.
      res.destroy();
    }
  });

  router.get('/audit/verify', async (req, res) => {
    if (auditScopeOf(actorOf(req)) !== null) throw errors.forbidden('verifying the audit log is for organisation admins');
    checkKnownParameters(req.query as Query, []);
    res.json(await verifyAuditLog(store));
  });
}
