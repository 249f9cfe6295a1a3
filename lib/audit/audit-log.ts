/**
 * Recording changes in the audit log: `recordAudit` is the one way in, for every means of change
 * (admin API routes, the key CLI, config.json at start and reload, sign-ins). It strips every secret
 * field from `before` and `after` whatever the caller passed, so no secret nor secret hash can reach
 * an entry.
 */
import type { AuditActor, AuditDraft, AuditEntry, AuditLogStore } from './audit-types';

/**
 * Field names never recorded, at any depth: secrets, their hashes and their last characters, and
 * tokens (config `keys[].key` holds a secret, `keySha256` its hash).
 */
const SECRET_FIELD = /secret|sha256|hash|password|token|^key$|^last4$|^csrf|^session/i;

/** Longest text kept in one field value, characters (the rest cut off: an entry stays small). */
const MAX_TEXT = 500;

/** `value` with every field named like a secret left out (see SECRET_FIELD) and long strings cut. */
export function withoutSecrets(value: unknown): unknown {
  if (typeof value === 'string') return value.length > MAX_TEXT ? value.slice(0, MAX_TEXT) : value;
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([field]) => !SECRET_FIELD.test(field)).map(([field, item]) => [field, withoutSecrets(item)]));
}

const fieldsOrNull = (fields: Record<string, unknown> | null | undefined) => {
  const kept = fields ? (withoutSecrets(fields) as Record<string, unknown>) : null;
  return kept && Object.keys(kept).length > 0 ? kept : null;
};

/**
 * Append one change to the audit log (secret fields stripped from `before` and `after`). The teams
 * admin API and the sign-in flow call it as the key routes do.
 * @returns the entry as stored (id, time, hash)
 * @throws Error when the store cannot append it (the caller's change is already made: it reports the failure)
 */
export function recordAudit(store: AuditLogStore, draft: AuditDraft): Promise<AuditEntry> {
  return store.appendAudit({ ...draft, before: fieldsOrNull(draft.before), after: fieldsOrNull(draft.after) });
}

/** A sign-in, as the identity flow reports it (lib/people/'s `onSignIn`). */
export interface SignInRecord {
  /** The ID token's `sub`; null when the sign-in failed before one was known. */
  subject: string | null;
  email: string | null;
  /** The client's address. */
  ip: string | null;
  /** Absent on success; on failure, why (the provider's error code, `state mismatch`, ...; never a token). */
  failure?: string;
  /** Groups and roles the user got, on success (recorded in `after`). */
  groups?: string[];
  roles?: string[];
}

/**
 * Record a sign-in (`signin`) or a failed one (`signin.failed`), with the user as actor and object.
 * @throws as recordAudit
 */
export function recordSignIn(store: AuditLogStore, signIn: SignInRecord): Promise<AuditEntry> {
  const subject = signIn.subject ?? '(unknown)';
  const actor: AuditActor = { subject, email: signIn.email };
  return recordAudit(store, {
    actor,
    action: signIn.failure === undefined ? 'signin' : 'signin.failed',
    object: { type: 'user', id: subject },
    after: signIn.failure === undefined ? { groups: signIn.groups, roles: signIn.roles } : { reason: signIn.failure },
    ip: signIn.ip,
  });
}

/**
 * The fields of `after` that differ from `before` (compared as JSON), as `{before, after}` holding
 * only those; `fields` limits the comparison (default: every field of either).
 */
export function changedFields(
  before: object, after: object, fields?: readonly string[],
): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const from = before as Record<string, unknown>;
  const to = after as Record<string, unknown>;
  const names = fields ?? [...new Set([...Object.keys(from), ...Object.keys(to)])];
  const changed = { before: {} as Record<string, unknown>, after: {} as Record<string, unknown> };
  for (const name of names) {
    if (JSON.stringify(from[name] ?? null) === JSON.stringify(to[name] ?? null)) continue;
    changed.before[name] = from[name] ?? null;
    changed.after[name] = to[name] ?? null;
  }
  return changed;
}
