/**
 * What happens on every sign-in, accepted or refused: one log line now; the audit log (issue 44,
 * item 6) records it here too, as `onSignIn` is the one place every sign-in outcome passes.
 */
import type { UserActor } from '../admin/actor';
import type { Logger } from '../observability/logger';

/**
 * Told of each sign-in at the callback.
 * @param actor the signed-in user; null when the sign-in failed before the provider named one
 * @param ok whether a session was opened
 * @param detail why it failed (the provider's or the library's message), or `signed in`
 * @param ip the client's address as Express reads it
 */
export type OnSignIn = (actor: UserActor | null, ok: boolean, detail: string, ip: string | undefined) => void | Promise<void>;

/** The sign-in hook: logs accepted sign-ins at info and failed ones at warn (never a token or a cookie). */
export function createOnSignIn(logger: Logger): OnSignIn {
  return function onSignIn(actor, ok, detail, ip) {
    const line = { message: ok ? 'sign-in' : 'sign-in failed', subject: actor?.subject ?? null, email: actor?.email ?? null, detail: detail.slice(0, 300), ip };
    if (ok) logger.info(line);
    else logger.warn(line);
  };
}
