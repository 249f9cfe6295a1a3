/**
 * The audit log's hash chain: each entry's `hash` is the SHA-256 of the canonical JSON of the entry
 * without its `hash` (its `prevHash`, the hash of the entry before, included). Canonical JSON here is
 * JSON.stringify with every object's keys in ascending code-unit order and no whitespace (the
 * ordering rule of RFC 8785, https://www.rfc-editor.org/rfc/rfc8785; numbers are JSON.stringify's,
 * which RFC 8785 adopts from ECMAScript for the finite numbers entries hold).
 */
import crypto from 'node:crypto';
import type { AuditDraft, AuditEntry, AuditHead } from './audit-types';

/** The `prevHash` of the first entry. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * `value` as canonical JSON (see the module comment); undefined object fields are left out, as JSON.stringify does.
 * @throws TypeError on a value JSON cannot hold (a bigint, a cycle)
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  const fields = Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined).sort();
  return `{${fields.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** SHA-256 (hex) of the canonical JSON of `entry` without its `hash`. */
export function hashAuditEntry(entry: Omit<AuditEntry, 'hash'> | AuditEntry): string {
  const { hash: _hash, ...rest } = entry as AuditEntry;
  return crypto.createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

/**
 * The entry that follows `head` (null: the first), made from `draft` at `at` (epoch ms). Fields the
 * draft leaves out are null; values are copied through JSON so the stored entry is exactly what is hashed.
 */
export function sealAuditEntry(draft: AuditDraft, head: AuditHead | null, at: number): AuditEntry {
  const unsealed: Omit<AuditEntry, 'hash'> = JSON.parse(JSON.stringify({
    id: (head?.id ?? 0) + 1,
    at: new Date(at).toISOString(),
    actor: draft.actor,
    action: draft.action,
    object: draft.object ?? null,
    team: draft.team ?? null,
    before: draft.before ?? null,
    after: draft.after ?? null,
    ip: draft.ip ?? null,
    prevHash: head?.hash ?? GENESIS_HASH,
  }));
  return { ...unsealed, hash: hashAuditEntry(unsealed) };
}

/** What `GET /admin/v1/audit/verify` answers. */
export type AuditVerification =
  | { intact: true; entries: number; lastId: number | null; lastHash: string | null }
  | { intact: false; entries: number; firstBrokenId: number; reason: string };

/**
 * Walks the chain as it is read, entry by entry (start with `createAuditVerifier()`, feed each page
 * in id order with `add`, end with `finish(head)`), so a long log is never held whole.
 */
export interface AuditVerifier {
  /** @returns false once a break is found (the caller may stop reading) */
  add(entries: readonly AuditEntry[]): boolean;
  /** The outcome, given the stored head (null: none kept, e.g. an empty log). */
  finish(head: AuditHead | null): AuditVerification;
}

/**
 * A verifier of the chain. An entry is broken when its id is not one more than the one before (one
 * removed, or reordered), its prevHash is not that entry's hash (one removed or reordered), or its
 * hash is not the hash of its fields (edited). A removed last entry is found against the head.
 */
export function createAuditVerifier(): AuditVerifier {
  let previous: AuditHead | null = null;
  let count = 0;
  let broken: { id: number; reason: string } | null = null;
  return {
    add(entries) {
      for (const entry of entries) {
        if (broken) return false;
        count += 1;
        const expectedId = (previous?.id ?? 0) + 1;
        const id = Number.isSafeInteger(entry?.id) ? entry.id : expectedId;
        if (entry?.id !== expectedId) broken = { id: Math.min(id, expectedId), reason: `expected entry ${expectedId} here, found ${String(entry?.id)} (an entry removed or moved)` };
        else if (entry.prevHash !== (previous?.hash ?? GENESIS_HASH)) broken = { id, reason: `entry ${id}'s prevHash is not the hash of the entry before it (an entry removed or moved)` };
        else if (entry.hash !== hashAuditEntry(entry)) broken = { id, reason: `entry ${id}'s fields do not hash to its hash (the entry was edited)` };
        previous = { id, hash: entry?.hash };
      }
      return broken === null;
    },
    finish(head) {
      if (broken) return { intact: false, entries: count, firstBrokenId: broken.id, reason: broken.reason };
      const last = previous as AuditHead | null;
      if (!head && last) return { intact: false, entries: count, firstBrokenId: last.id, reason: 'the log has entries but no head (the head was removed)' };
      if (head && (!last || head.id !== last.id || head.hash !== last.hash)) {
        const firstBrokenId = (last?.id ?? 0) + 1;
        return { intact: false, entries: count, firstBrokenId, reason: `the log ends at entry ${last?.id ?? 0}, its head names entry ${head.id} (entries removed from the end)` };
      }
      return { intact: true, entries: count, lastId: last?.id ?? null, lastHash: last?.hash ?? null };
    },
  };
}
