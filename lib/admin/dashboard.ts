/**
 * The dashboard: static HTML, CSS and JS from the repository's `dashboard/` folder, served by the
 * gateway itself at `/dashboard` (no build step, no separate server). The page holds no data; it
 * asks the admin API with the token the operator signs in with (kept in session storage), or, for a
 * person signed in through the identity provider (`people.html`), with the session cookie and its CSRF token.
 */
import path from 'node:path';
import express, { Router } from 'express';

/** The `dashboard/` folder at the repository root (this file runs from `dist/lib/admin/`). */
export const DASHBOARD_DIRECTORY = path.resolve(__dirname, '..', '..', '..', 'dashboard');

export interface DashboardOptions {
  /** Folder of the static files. Default: `DASHBOARD_DIRECTORY`. */
  directory?: string;
}

/**
 * Content policy of the page: its own scripts, styles and API only; no framing (clickjacking), no
 * referrer, so nothing of the page leaks elsewhere.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Build the router that serves the dashboard. Mount it at `/dashboard` only when ADMIN_TOKEN or sign-in is configured (admin-surface.ts). */
export function createDashboard(options: DashboardOptions = {}): Router {
  const router = Router();
  router.use((_req, res, next) => {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    next();
  });
  // max-age=0: the browser revalidates, so a gateway upgrade never runs an old script against a new API.
  router.use(express.static(options.directory ?? DASHBOARD_DIRECTORY, { index: 'index.html', cacheControl: true, maxAge: 0, fallthrough: true }));
  return router;
}
