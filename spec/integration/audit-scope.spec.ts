/**
 * `GET /admin/v1/audit` by role, over HTTP: the audit routes behind a stand-in for the identity
 * branch's auth step (it sets the caller as lib/admin/actor.ts defines it). An organisation admin sees
 * every entry and may verify; a team admin only the entries of the teams they administer, in JSON and
 * in JSON lines, and may not verify; a member gets 403.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { recordAudit } from '../../lib/audit/audit-log';
import { addAuditRoutes } from '../../lib/admin/audit-routes';
import { setActor, type Actor, type UserActor } from '../../lib/admin/actor';
import { GatewayError } from '../../lib/http/errors';
import { MemoryStore } from '../../lib/store/memory-store';

const user = (fields: Partial<UserActor>): UserActor => ({
  kind: 'user', subject: 'sub', email: 'u@example.com', name: null, groups: [], orgAdmin: false, teams: [], adminOf: [], csrfToken: 'c', sessionId: 's', ...fields,
});

const CALLERS: Record<string, Actor> = {
  token: { kind: 'admin-token' },
  org: user({ subject: 'org', orgAdmin: true }),
  'search-admin': user({ subject: 'sa', teams: ['search'], adminOf: ['search'] }),
  member: user({ subject: 'm', teams: ['search'] }),
};

describe('audit log by role (GET /admin/v1/audit over HTTP)', () => {
  let server: http.Server;
  let url: string;

  before(async () => {
    const store = new MemoryStore();
    for (const [team, id] of [['search', 'k1'], ['web', 'k2'], [null, 'k3'], ['search', 'k4']] as const) {
      await recordAudit(store, { actor: 'admin-token', action: 'key.create', object: { type: 'key', id }, team });
    }
    const router = Router();
    router.use((req: Request, _res, next) => {
      setActor(req, CALLERS[String(req.headers['x-test-caller'])]);
      next();
    });
    addAuditRoutes(router, { store });
    const app = express();
    app.use('/admin/v1', router);
    app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
      const status = err instanceof GatewayError ? err.status : 500;
      res.status(status).json({ type: 'error', error: { message: (err as Error).message } });
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/v1`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  const get = async (caller: string, pathAndQuery: string) => {
    const response = await fetch(`${url}${pathAndQuery}`, { headers: { 'x-test-caller': caller } });
    const text = await response.text();
    return { status: response.status, text, body: /json/.test(response.headers.get('content-type') ?? '') && !text.includes('\n{') ? JSON.parse(text) : null };
  };

  it('ADMIN_TOKEN and organisation admins see every entry and may verify', async () => {
    for (const caller of ['token', 'org']) {
      expect((await get(caller, '/audit')).body.data.map((e: any) => e.object.id)).to.deep.equal(['k1', 'k2', 'k3', 'k4']);
      expect((await get(caller, '/audit/verify')).body).to.deep.include({ intact: true, entries: 4 });
    }
  });

  it('a team admin sees only their teams\' entries (JSON and JSON lines), and may not verify', async () => {
    expect((await get('search-admin', '/audit')).body.data.map((e: any) => e.object.id)).to.deep.equal(['k1', 'k4']);
    expect((await get('search-admin', '/audit?team=web')).body.data).to.deep.equal([]);
    const lines = await get('search-admin', '/audit?format=jsonl');
    expect(lines.text.trimEnd().split('\n').map((line) => JSON.parse(line).object.id)).to.deep.equal(['k1', 'k4']);
    expect((await get('search-admin', '/audit/verify')).status).to.equal(403);
  });

  it('a member gets 403', async () => {
    const refused = await get('member', '/audit');
    expect(refused.status).to.equal(403);
    expect(refused.body.error.message).to.include('team admins');
  });
});
