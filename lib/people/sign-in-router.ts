/**
 * The sign-in routes, mounted at `/dashboard` when `auth.oidc` is set:
 * - `GET /dashboard/login`: starts a sign-in (PKCE verifier, state and nonce kept in the store for
 *   `PENDING_SIGN_IN_SECONDS` under a random id the browser holds in a cookie, so any instance
 *   serves the callback) and redirects to the provider;
 * - `GET /dashboard/callback`: the redirect URI `<baseUrl>/dashboard/callback`; finishes the sign-in,
 *   records the user, opens a session and redirects to the dashboard;
 * - `POST /dashboard/logout`: ends the session (with its CSRF token in `x-csrf-token`);
 * - `GET /dashboard/sign-in.json`: tells the dashboard that sign-in is on.
 * Errors are GatewayErrors, rendered in the admin API's (native) shape.
 */
import { Router, type Request, type RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { TeamConfig } from '../config/people';
import { errors, GatewayError } from '../http/errors';
import type { PeopleStore, UserRecord } from '../store/people-types';
import type { RelyingParty, SignInClaims } from './oidc';
import { resolveMembership } from './roles';
import { CSRF_HEADER, csrfTokenMatches, randomToken, readCookie, SIGN_IN_COOKIE, type Sessions } from './sessions';
import type { OnSignIn } from './sign-in-hook';

/** Where a signed-in person lands: their own keys and, for a team admin, their teams' (dashboard/people.html). */
export const SIGNED_IN_PAGE = '/dashboard/people.html';

/** How long a sign-in may take at the provider, seconds. */
export const PENDING_SIGN_IN_SECONDS = 600;

export interface SignInRouterOptions {
  relyingParty: RelyingParty;
  sessions: Sessions;
  people: PeopleStore;
  /** The configured base URL (the callback's URL is rebuilt from it, never from the Host header). */
  baseUrl: string;
  /** `auth.oidc.adminGroups` (read per sign-in: a reload may change them). */
  adminGroups: () => readonly string[];
  /** The teams, now. */
  teams: () => readonly TeamConfig[];
  onSignIn: OnSignIn;
  /** Epoch ms. */
  now: () => number;
}

/** Sign-ins started or finished per client address per minute (per instance) before 429. */
export const SIGN_IN_LIMIT_PER_MINUTE = 120;

/**
 * 429 (`rate_limit_error`, `retry-after`) past `SIGN_IN_LIMIT_PER_MINUTE` requests to /login and
 * /callback from one address in a minute: each starts a pending sign-in in the store, or a call to the
 * provider, before anyone is known. High enough for an office behind one address signing in at once.
 */
function createSignInLimit(): RequestHandler {
  return rateLimit({
    windowMs: 60_000, limit: SIGN_IN_LIMIT_PER_MINUTE, standardHeaders: false, legacyHeaders: false,
    handler: (_req, _res, next) => next(new GatewayError(429, 'rate_limit_error', 'too many sign-ins from this address; retry in a minute', {
      chatCode: 'rate_limit_exceeded', headers: { 'retry-after': '60' },
    })),
  });
}

const signInFailed = (message: string) => new GatewayError(401, 'authentication_error', `sign-in failed: ${message}`, { chatCode: 'invalid_api_key' });

/** Build the sign-in router (see the file's comment). */
export function createSignInRouter(options: SignInRouterOptions): Router {
  const { relyingParty, sessions, people } = options;
  const router = Router();

  /** The user record of `claims`, their membership worked out again from this sign-in's groups. */
  const recordUser = async (claims: SignInClaims): Promise<UserRecord> => {
    const [known, emailTeams] = await Promise.all([people.getUser(claims.subject), claims.email ? people.teamsOfEmail(claims.email) : []]);
    const at = new Date(options.now()).toISOString();
    const user: UserRecord = {
      ...claims, ...resolveMembership(claims.groups, options.adminGroups(), options.teams(), emailTeams),
      firstSignInAt: known?.firstSignInAt ?? at, lastSignInAt: at,
    };
    await people.saveUser(user);
    return user;
  };

  // Tells the dashboard's sign-in panel that sign-in is on (without auth.oidc this path is a 404).
  router.get('/sign-in.json', (_req, res) => {
    res.json({ signIn: '/dashboard/login' });
  });

  const signInLimit = createSignInLimit();
  router.get('/login', signInLimit, async (_req, res) => {
    let started;
    try {
      started = await relyingParty.start(SIGNED_IN_PAGE);
    } catch (err) {
      throw new GatewayError(502, 'api_error', `the identity provider cannot be reached: ${(err as Error).message.slice(0, 200)}`, { chatCode: 'upstream_error' });
    }
    const id = randomToken();
    await people.savePendingSignIn(id, started.pending, PENDING_SIGN_IN_SECONDS * 1000);
    sessions.setSignInCookie(res, id, PENDING_SIGN_IN_SECONDS);
    res.setHeader('cache-control', 'no-store');
    res.redirect(302, started.url);
  });

  router.get('/callback', signInLimit, async (req: Request, res) => {
    res.setHeader('cache-control', 'no-store');
    const id = readCookie(req.headers.cookie, SIGN_IN_COOKIE);
    const pending = id ? await people.takePendingSignIn(id) : null;
    sessions.clearSignInCookie(res);
    if (!pending) {
      await options.onSignIn(null, false, 'no sign-in under way (or it expired)', req.ip, false);
      throw errors.invalidRequest('no sign-in under way in this browser, or it took over 10 minutes: start again at /dashboard/login');
    }
    const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    let claims: SignInClaims;
    try {
      claims = await relyingParty.finish(new URL(`${options.baseUrl}/dashboard/callback${query}`), pending);
    } catch (err) {
      // openid-client's errors carry the provider's OAuth error code and description (RFC 6749, 5.2).
      const { error, error_description: description } = err as { error?: unknown; error_description?: unknown };
      const detail = [(err as Error).message, error, description].filter((part) => typeof part === 'string' && part).join(': ').slice(0, 300);
      await options.onSignIn(null, false, detail, req.ip);
      throw signInFailed(detail);
    }
    const actor = await sessions.open(res, await recordUser(claims));
    await options.onSignIn(actor, true, 'signed in', req.ip);
    res.redirect(303, pending.returnTo);
  });

  router.post('/logout', async (req, res) => {
    res.setHeader('cache-control', 'no-store');
    const actor = await sessions.actorOf(req);
    if (actor && !csrfTokenMatches(req.headers[CSRF_HEADER], actor.csrfToken)) {
      throw new GatewayError(403, 'permission_error', `sign-out needs the session's CSRF token in ${CSRF_HEADER} (GET /admin/v1/me)`, { chatCode: 'forbidden' });
    }
    await sessions.close(req, res);
    res.status(204).end();
  });
  return router;
}
