/**
 * The admin surface beside the public API: the sign-in routes (`auth.oidc`, lib/people/), the admin
 * API at `/admin/v1` and the dashboard's files at `/dashboard`, mounted when ADMIN_TOKEN or sign-in is
 * set (without either, nothing: the paths answer 404).
 */
import { Router } from 'express';
import type { GatewayConfig } from '../config';
import type { TeamConfig } from '../config/people';
import { createPeople } from '../people';
import { ADMIN_API_PATH, DASHBOARD_PATH } from '../pipeline/route-table';
import { createAdminRouter, type AdminRouterOptions } from './admin-router';
import { createDashboard } from './dashboard';

export interface AdminSurfaceOptions extends Omit<AdminRouterOptions, 'adminToken' | 'people'> {
  /** The start's config (ADMIN_TOKEN, `auth`, `baseUrl`). */
  config: GatewayConfig;
  /** The teams, now (config `teams[]`, as reloaded). */
  teams: () => readonly TeamConfig[];
}

/**
 * The router holding the admin surface (empty when it is off; the start's log line says which).
 * @throws ConfigError as `createPeople`
 */
export function createAdminSurface(options: AdminSurfaceOptions): Router {
  const { config, logger } = options;
  const router = Router();
  const people = createPeople({ config, store: options.store, logger, teams: options.teams, now: options.clock ?? Date.now });
  if (!config.adminToken && !people) {
    logger.info({ message: `admin API and dashboard are off: set ADMIN_TOKEN (or auth.oidc) to enable ${ADMIN_API_PATH} and ${DASHBOARD_PATH}` });
    return router;
  }
  // The sign-in routes come before the dashboard's files; its sessions reach the admin API's auth step.
  if (people) router.use(DASHBOARD_PATH, people.signInRouter);
  router.use(ADMIN_API_PATH, createAdminRouter({
    ...options, adminToken: config.adminToken,
    people: people ? { sessions: people.sessions, store: people.store, teams: options.teams } : undefined,
  }));
  router.use(DASHBOARD_PATH, createDashboard());
  const ways = [config.adminToken ? 'bearer ADMIN_TOKEN' : '', people ? 'OIDC sign-in at /dashboard/login' : ''].filter(Boolean).join(', ');
  logger.info({ message: `admin API on at ${ADMIN_API_PATH} and dashboard at ${DASHBOARD_PATH} (${ways})` });
  return router;
}
