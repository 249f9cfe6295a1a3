/**
 * People (issue 44): sign-in through the company's OpenID Connect provider, sessions, roles and
 * teams. `createPeople` builds it once at start when `auth.oidc` is set; the composition (lib/app.ts)
 * mounts its sign-in routes at `/dashboard` and hands its sessions to the admin API's auth step.
 */
import type { Router } from 'express';
import type { GatewayConfig } from '../config';
import { ConfigError } from '../config/config-error';
import type { TeamConfig } from '../config/people';
import type { AuditLogStore } from '../store/types';
import type { Logger } from '../observability/logger';
import type { PeopleStore, WithPeopleStore } from '../store/people-types';
import { createRelyingParty } from './oidc';
import { createSessions, type Sessions } from './sessions';
import { createOnSignIn, type OnSignIn } from './sign-in-hook';
import { createSignInRouter } from './sign-in-router';

export type { OnSignIn } from './sign-in-hook';

export interface People {
  sessions: Sessions;
  store: PeopleStore;
  /** `GET /login`, `GET /callback`, `POST /logout`: mount at `/dashboard`. */
  signInRouter: Router;
}

export interface PeopleOptions {
  /** The start's config (`auth`, `baseUrl`: both read once). */
  config: GatewayConfig;
  /** The gateway's store; its `people` role (people-types.ts) keeps sign-ins, sessions and users. */
  store: object;
  logger: Logger;
  /** The teams, now (config `teams[]`, as reloaded). */
  teams: () => readonly TeamConfig[];
  /** Epoch ms. */
  now: () => number;
  /** Told of every sign-in. Default: `createOnSignIn(logger)` (a log line). */
  onSignIn?: OnSignIn;
}

/**
 * Sign-in and sessions, or null when `auth.oidc` is not set (the admin API then takes ADMIN_TOKEN only).
 * Nothing is fetched from the provider here: its discovery runs at the first sign-in.
 * @throws ConfigError when the store has no people role (a custom store) or baseUrl is missing
 */
export function createPeople(options: PeopleOptions): People | null {
  const { config } = options;
  const oidc = config.auth.oidc;
  if (!oidc) return null;
  const store = (options.store as WithPeopleStore).people;
  if (!store) throw new ConfigError('invalid configuration: auth.oidc needs a store with the people role (the memory and Redis stores have it; a custom store must provide `people`)');
  if (!config.baseUrl) throw new ConfigError('invalid configuration: auth.oidc needs baseUrl');
  const baseUrl = config.baseUrl.replace(/\/+$/, '');
  const sessions = createSessions({ people: store, ttlSeconds: config.auth.sessionTtlSeconds, secure: baseUrl.startsWith('https:'), now: options.now });
  const signInRouter = createSignInRouter({
    relyingParty: createRelyingParty(oidc, `${baseUrl}/dashboard/callback`, oidc.clientSecret ?? undefined),
    sessions, people: store, baseUrl,
    adminGroups: () => oidc.adminGroups,
    teams: options.teams,
    onSignIn: options.onSignIn ?? createOnSignIn(options.logger, 'appendAudit' in options.store ? options.store as AuditLogStore : undefined),
    now: options.now,
  });
  return { sessions, store, signInRouter };
}
