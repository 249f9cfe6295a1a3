/**
 * Signed-in sessions (issue 44): the id is 256 random bits in an HttpOnly, `SameSite=Lax` cookie
 * (`Secure` when the base URL is https); the store keeps the session under the SHA-256 of that id,
 * with the user as they signed in and a CSRF token, until `auth.sessionTtl` runs out or the user
 * signs out (then it is deleted: a stolen cookie stops working at once). Cookies:
 * https://httpwg.org/specs/rfc6265.html (attributes), SameSite: draft-ietf-httpbis-rfc6265bis.
 */
import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import type { UserActor } from '../admin/actor';
import { digestsEqual, hashSecret } from '../keys/secrets';
import type { PeopleStore, SessionRecord, UserRecord } from '../store/people-types';

/** The session cookie's name. */
export const SESSION_COOKIE = 'gateway_session';
/** The cookie naming a sign-in under way (between `/dashboard/login` and the callback). */
export const SIGN_IN_COOKIE = 'gateway_signin';
/** The header state-changing calls of a session carry (its CSRF token). */
export const CSRF_HEADER = 'x-csrf-token';

/** 256 random bits, base64url (43 characters): session ids, pending sign-in ids, CSRF tokens. */
export function randomToken(): string {
  return crypto.randomBytes(32).toString('base64url');
}

/** The value of cookie `name` in a `Cookie` header, or undefined. Only token-shaped values (base64url) are read. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const cut = part.indexOf('=');
    if (cut > 0 && part.slice(0, cut).trim() === name) {
      const value = part.slice(cut + 1).trim();
      return /^[A-Za-z0-9_-]{1,128}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

export interface SessionsOptions {
  people: PeopleStore;
  /** Session lifetime, seconds (`auth.sessionTtlSeconds`). */
  ttlSeconds: number;
  /** Whether cookies carry `Secure` (the base URL is https). */
  secure: boolean;
  /** Epoch ms. */
  now: () => number;
}

export interface Sessions {
  /**
   * Open a session for `user` and set its cookie on `res`.
   * @returns the actor of the new session
   */
  open(res: Response, user: UserRecord): Promise<UserActor>;
  /** The actor of the request's session cookie; null when there is none, or it expired or was ended. */
  actorOf(req: Request): Promise<UserActor | null>;
  /** Whether the request carries a session cookie at all (live or not). */
  hasCookie(req: Request): boolean;
  /** End the request's session (deleted from the store) and clear its cookie. */
  close(req: Request, res: Response): Promise<void>;
  /** Set a short-lived cookie (the pending sign-in), path `/dashboard`. */
  setSignInCookie(res: Response, id: string, maxAgeSeconds: number): void;
  clearSignInCookie(res: Response): void;
}

/** Whether `candidate` is the session's CSRF token (constant time). */
export function csrfTokenMatches(candidate: unknown, token: string): boolean {
  return typeof candidate === 'string' && digestsEqual(hashSecret(candidate), hashSecret(token));
}

/** The session role of lib/people: cookies on one side, the store on the other. */
export function createSessions(options: SessionsOptions): Sessions {
  const { people } = options;
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure: options.secure };
  const actorFrom = (session: SessionRecord, sessionId: string): UserActor => ({
    kind: 'user', subject: session.user.subject, email: session.user.email, name: session.user.name, groups: session.user.groups,
    orgAdmin: session.user.orgAdmin, teams: session.user.teams, adminOf: session.user.adminOf, csrfToken: session.csrfToken, sessionId,
  });
  return {
    async open(res, user) {
      const sessionId = randomToken();
      const createdAt = options.now();
      const session: SessionRecord = {
        subject: user.subject, csrfToken: randomToken(), createdAt, expiresAt: createdAt + options.ttlSeconds * 1000,
        user: { subject: user.subject, email: user.email, name: user.name, groups: user.groups, orgAdmin: user.orgAdmin, teams: user.teams, adminOf: user.adminOf },
      };
      await people.saveSession(hashSecret(sessionId), session);
      res.cookie(SESSION_COOKIE, sessionId, { ...cookieOptions, path: '/', maxAge: options.ttlSeconds * 1000 });
      return actorFrom(session, sessionId);
    },
    async actorOf(req) {
      const sessionId = readCookie(req.headers.cookie, SESSION_COOKIE);
      if (!sessionId) return null;
      const session = await people.getSession(hashSecret(sessionId));
      if (!session || session.expiresAt <= options.now()) return null;
      return actorFrom(session, sessionId);
    },
    hasCookie(req) {
      return readCookie(req.headers.cookie, SESSION_COOKIE) !== undefined;
    },
    async close(req, res) {
      const sessionId = readCookie(req.headers.cookie, SESSION_COOKIE);
      if (sessionId) await people.deleteSession(hashSecret(sessionId));
      res.clearCookie(SESSION_COOKIE, { ...cookieOptions, path: '/' });
    },
    setSignInCookie(res, id, maxAgeSeconds) {
      res.cookie(SIGN_IN_COOKIE, id, { ...cookieOptions, path: '/dashboard', maxAge: maxAgeSeconds * 1000 });
    },
    clearSignInCookie(res) {
      res.clearCookie(SIGN_IN_COOKIE, { ...cookieOptions, path: '/dashboard' });
    },
  };
}
