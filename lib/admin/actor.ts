/**
 * Who is calling the admin API or the dashboard: the holder of ADMIN_TOKEN (automation and break-glass,
 * an organisation admin), or a user signed in through the company's identity provider with the roles
 * their groups give them. The auth step sets it on the request; every admin route reads it from there.
 */
import type { Request } from 'express';
import type { SignedInUser } from '../store/people-types';

/** The roles of the admin API (issue: people, teams and budgets). */
export type Role = 'org-admin' | 'team-admin' | 'member';

/** The ADMIN_TOKEN holder. Shown as `admin-token` in the audit log. */
export interface TokenActor {
  kind: 'admin-token';
}

/** A user signed in through OIDC: who they are and their roles (a {@link SignedInUser}), and their session. */
export type UserActor = SignedInUser & {
  kind: 'user';
  /** The session's CSRF token (sent back as `x-csrf-token` on state-changing calls). */
  csrfToken: string;
  /** The session id (never logged); sign-out deletes it from the store. */
  sessionId: string;
};

export type Actor = TokenActor | UserActor;

const ACTOR = Symbol('actor');

/** Record the caller of `req` (the admin auth step does). */
export function setActor(req: Request, actor: Actor): void {
  (req as unknown as Record<symbol, Actor>)[ACTOR] = actor;
}

/**
 * The caller of `req`, as the admin auth step recorded it.
 * @throws Error when no auth step ran (a route mounted outside the admin router)
 */
export function actorOf(req: Request): Actor {
  const actor = (req as unknown as Record<symbol, Actor | undefined>)[ACTOR];
  if (!actor) throw new Error('admin route reached without an authenticated caller');
  return actor;
}

/** How the audit log and messages name `actor`: the user's subject, or `admin-token`. */
export function actorName(actor: Actor): string {
  return actor.kind === 'admin-token' ? 'admin-token' : actor.subject;
}
