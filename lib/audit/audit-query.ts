/**
 * Reading the audit log back: the filters of `GET /admin/v1/audit` and a bounded scan that pages
 * through the store in id order, so no request holds more than one page and a sparse filter answers
 * with a cursor to go on rather than reading the whole log.
 */
import { createAuditVerifier, type AuditVerification } from './audit-chain';
import type { AuditEntry, AuditLogStore } from './audit-types';

/** Entries read from the store per page. */
export const AUDIT_PAGE_ENTRIES = 500;

/** Entries one scan looks at, at most, before it answers with a cursor (a sparse filter over a long log). */
export const AUDIT_SCAN_BUDGET = 10_000;

export interface AuditFilter {
  /** `admin-token`, `cli`, `config`, or a user's subject or email. */
  actor?: string;
  action?: string;
  objectType?: string;
  objectId?: string;
  team?: string;
  /** Epoch ms: entries at or after. */
  since?: number;
  /** Epoch ms: entries before. */
  until?: number;
  /** The teams whose entries the caller may see (a team admin's); null or absent: every entry (an organisation admin). */
  visibleTeams?: readonly string[] | null;
}

/** Whether `entry` passes `filter`. */
export function matchesAuditFilter(entry: AuditEntry, filter: AuditFilter): boolean {
  const { actor } = entry;
  if (filter.actor !== undefined && (typeof actor === 'string' ? actor !== filter.actor : actor?.subject !== filter.actor && actor?.email !== filter.actor)) return false;
  if (filter.action !== undefined && entry.action !== filter.action) return false;
  if (filter.objectType !== undefined && entry.object?.type !== filter.objectType) return false;
  if (filter.objectId !== undefined && entry.object?.id !== filter.objectId) return false;
  if (filter.team !== undefined && entry.team !== filter.team) return false;
  if (filter.visibleTeams && (entry.team === null || !filter.visibleTeams.includes(entry.team))) return false;
  const at = Date.parse(entry.at);
  if (filter.since !== undefined && !(at >= filter.since)) return false;
  if (filter.until !== undefined && !(at < filter.until)) return false;
  return true;
}

/** One answer of a scan: the matching entries and where to go on (null: the end of the log was reached). */
export interface AuditPage {
  entries: AuditEntry[];
  cursor: number | null;
}

/**
 * The entries after id `afterId` that pass `filter`, in id order, at most `limit`, looking at no more
 * than `budget` entries: the cursor is the last id looked at when the limit or the budget was
 * reached, null when the log ended first.
 */
export async function scanAudit(store: AuditLogStore, filter: AuditFilter, afterId: number, limit: number, budget = AUDIT_SCAN_BUDGET): Promise<AuditPage> {
  const entries: AuditEntry[] = [];
  let cursor = afterId;
  let looked = 0;
  while (entries.length < limit && looked < budget) {
    const page = await store.readAudit(cursor, Math.min(AUDIT_PAGE_ENTRIES, budget - looked));
    if (page.length === 0) return { entries, cursor: null };
    for (const entry of page) {
      looked += 1;
      cursor += 1;
      if (matchesAuditFilter(entry, filter)) entries.push(entry);
      if (entries.length === limit) break;
    }
  }
  return { entries, cursor };
}

/**
 * Verify the chain as far as the head read first (entries appended meanwhile are left for the next
 * verification), page by page (audit-chain.ts), so a long log is never held whole.
 */
export async function verifyAuditLog(store: AuditLogStore): Promise<AuditVerification> {
  const verifier = createAuditVerifier();
  const head = await store.readAuditHead();
  // Positions read so far: an untouched log's ids are its positions, 1 on.
  let read = 0;
  const end = head?.id ?? Number.MAX_SAFE_INTEGER;
  while (read < end) {
    const page = (await store.readAudit(read, Math.min(AUDIT_PAGE_ENTRIES, end - read)));
    if (page.length === 0) break;
    read += page.length;
    if (!verifier.add(page)) break;
  }
  return verifier.finish(head);
}
