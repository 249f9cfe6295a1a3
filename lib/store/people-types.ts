/**
 * The people role of the store (lib/people/ uses it): sign-ins under way, sessions, the users who
 * signed in, and team members added by email. Memory (memory-people.ts) and Redis (redis-people.ts)
 * implementations; every record with a lifetime expires in the store itself, so any instance sharing
 * the store serves the callback of a sign-in another one started, and every later call of the session.
 * The team role beside it (TeamStore, below) keeps the teams made through the admin API.
 */
import type { TeamConfig } from '../config/people';

/** A sign-in under way, between `GET /dashboard/login` and the provider's redirect back to the callback. */
export interface PendingSignIn {
  /** PKCE code verifier (RFC 7636), sent to the token endpoint. */
  codeVerifier: string;
  /** The `state` sent to the provider, checked on the callback. */
  state: string;
  /** The `nonce` sent to the provider, checked in the ID token. */
  nonce: string;
  /** Where the browser goes after signing in (a path of this gateway). */
  returnTo: string;
}

/** A signed-in session. The store keys it by the SHA-256 of its id, so a store dump holds no live cookie. */
export interface SessionRecord {
  /** The user's OIDC subject (`sub`). */
  subject: string;
  /** The CSRF token state-changing calls must send in `x-csrf-token`. */
  csrfToken: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms; the store forgets the session then. */
  expiresAt: number;
  /** The user as they signed in: roles and teams hold for the session (refreshed at the next sign-in). */
  user: SignedInUser;
}

/** A user as recorded at first sign-in and refreshed at each one (membership follows the provider's groups). */
export interface UserRecord {
  subject: string;
  email: string | null;
  name: string | null;
  /** The groups the provider released at the last sign-in. */
  groups: string[];
  /** Whether `auth.oidc.adminGroups` made them an organisation admin at the last sign-in. */
  orgAdmin: boolean;
  /** Teams they belong to, as of the last sign-in. */
  teams: string[];
  /** Teams they administer, as of the last sign-in. */
  adminOf: string[];
  /** ISO 8601. */
  firstSignInAt: string;
  /** ISO 8601. */
  lastSignInAt: string;
}

/** Who a user is and what they may do, as of their last sign-in: a session's user, and the admin API's caller (lib/admin/actor.ts). */
export type SignedInUser = Pick<UserRecord, 'subject' | 'email' | 'name' | 'groups' | 'orgAdmin' | 'teams' | 'adminOf'>;

/** The people role (see the file's comment). Emails are compared lower-cased. */
export interface PeopleStore {
  /** Keep a sign-in under way for `ttlMs` under `id` (random). */
  savePendingSignIn(id: string, pending: PendingSignIn, ttlMs: number): Promise<void>;
  /** Take (read and delete at once: a callback is served once) the sign-in under `id`; null when none or expired. */
  takePendingSignIn(id: string): Promise<PendingSignIn | null>;
  /** Keep a session under `idHash` (SHA-256 hex of the cookie's id) until `session.expiresAt`. */
  saveSession(idHash: string, session: SessionRecord): Promise<void>;
  /** The live session under `idHash`, or null. */
  getSession(idHash: string): Promise<SessionRecord | null>;
  /** End a session at once (sign-out); false when there was none. */
  deleteSession(idHash: string): Promise<boolean>;
  /** Record or replace a user. */
  saveUser(user: UserRecord): Promise<void>;
  getUser(subject: string): Promise<UserRecord | null>;
  /** Every user recorded, by subject. */
  listUsers(): Promise<UserRecord[]>;
  /** Remember that `email` joins team `teamId` at its next sign-in (providers without groups). */
  addTeamMemberByEmail(teamId: string, email: string): Promise<void>;
  /** Teams `email` was added to by email. */
  teamsOfEmail(email: string): Promise<string[]>;
}

/** A store that has the people role (the memory and Redis stores do; a custom store may). */
export interface WithPeopleStore {
  readonly people?: PeopleStore;
}

/** One member's own monthly cap in a team, set through the admin API (replaces the team's `memberMonthlyCreditCap` for them). */
export interface MemberCapRecord {
  team: string;
  /** The member's OIDC subject (a key's `owner`). */
  subject: string;
  /** Credits per UTC month. */
  monthlyCreditCap: number;
}

/** What the team role holds: the teams made through the admin API and the members' own caps. */
export interface TeamStoreState {
  /** By id. */
  teams: TeamConfig[];
  /** By team, then subject. */
  memberCaps: MemberCapRecord[];
}

/**
 * The team role (lib/people/team-directory.ts reads it): teams made through the admin API (config.json's
 * stay in the file) and per-member cap overrides. Memory (memory-teams.ts) and Redis (redis-teams.ts)
 * implementations; every instance sharing the store reads the same state.
 */
export interface TeamStore {
  /** Every team and member cap held, at once. */
  readTeams(): Promise<TeamStoreState>;
  /** Add `team`; false (nothing written) when a team with its id exists. */
  createTeam(team: TeamConfig): Promise<boolean>;
  /**
   * Replace team `before.id` with `after` only while it is still exactly `before` (a compare-and-set:
   * two admins' edits never lose one another); false when it changed since or is gone.
   */
  replaceTeam(before: TeamConfig, after: TeamConfig): Promise<boolean>;
  /**
   * Set (a number, credits per UTC month) or clear (null) member `subject`'s own cap in `team`.
   * @returns the cap it had before, null: none
   */
  setMemberCap(team: string, subject: string, monthlyCreditCap: number | null): Promise<number | null>;
}

/** A store that has the team role (the memory and Redis stores do; a custom store may). */
export interface WithTeamStore {
  readonly teams?: TeamStore;
}
