/**
 * What happens on every sign-in, accepted or refused: one log line and one audit log entry
 * (`signin` or `signin.failed`, lib/audit/), as `onSignIn` is the one place every sign-in outcome passes.
 */
import type { UserActor } from '../admin/actor';
import { recordSignIn } from '../audit/audit-log';
import { rolesOf } from './roles';
import type { Logger } from '../observability/logger';
import type { AuditLogStore } from '../store/types';

/**
 * Told of each sign-in at the callback.
 * @param actor the signed-in user; null when the sign-in failed before the provider named one
 * @param ok whether a session was opened
 * @param detail why it failed (the provider's or the library's message), or `signed in`
 * @param ip the client's address as Express reads it
 * @param audited false for a callback that carried no sign-in at all (anyone may send one): logged, not
 *   put in the audit log, which a stranger could otherwise grow at will
 */
export type OnSignIn = (actor: UserActor | null, ok: boolean, detail: string, ip: string | undefined, audited?: boolean) => void | Promise<void>;

/**
 * The sign-in hook: logs accepted sign-ins at info and failed ones at warn, and records each in the
 * audit log when `audit` is given (never a token or a cookie in either).
 * @returns a hook whose promise rejects when the audit log cannot be written (the store is down)
 */
export function createOnSignIn(logger: Logger, audit?: AuditLogStore): OnSignIn {
  return async function onSignIn(actor, ok, detail, ip, audited = true) {
    const line = { message: ok ? 'sign-in' : 'sign-in failed', subject: actor?.subject ?? null, email: actor?.email ?? null, detail: detail.slice(0, 300), ip };
    if (ok) logger.info(line);
    else logger.warn(line);
    if (!audit || !audited) return;
    const roles = actor ? rolesOf(actor) : undefined;
    await recordSignIn(audit, {
      subject: actor?.subject ?? null, email: actor?.email ?? null, ip: ip ?? null,
      ...(ok ? { groups: actor?.groups, roles } : { failure: detail.slice(0, 300) }),
    });
  };
}
