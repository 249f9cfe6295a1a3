/** The metrics' route label (lib/pipeline/route-table.ts): the route table's names, never what a client sent. */
import { expect } from 'chai';
import { routeLabel } from '../../lib/pipeline/route-table';

describe('route label of the metrics (routeLabel)', () => {
  it('names a public path as the router matches it: any case, one trailing slash, the method as sent', () => {
    expect(routeLabel('POST /V1/Messages/')).to.equal('POST /v1/messages');
    expect(routeLabel('POST /v1/chat/completions/')).to.equal('POST /v1/chat/completions');
    expect(routeLabel('DELETE /v1/models')).to.equal('DELETE /v1/models');
    expect(routeLabel('POST /v1/messages//')).to.equal('unmatched');
  });

  it('labels every stored response under one route (GET/DELETE /v1/responses/{id})', () => {
    expect(routeLabel('GET /v1/responses/resp_abc123')).to.equal('GET /v1/responses/{id}');
    expect(routeLabel('DELETE /v1/responses/resp_xyz')).to.equal('DELETE /v1/responses/{id}');
    expect(routeLabel('GET /v1/responses/resp_abc/input_items')).to.equal('unmatched');
  });

  it('labels everything under the admin API and the dashboard by its mount point', () => {
    expect(routeLabel('GET /admin/v1')).to.equal('GET /admin/v1');
    expect(routeLabel('PATCH /admin/v1/keys/key_8f2c/rotate')).to.equal('PATCH /admin/v1');
    expect(routeLabel('GET /Dashboard/app.js')).to.equal('GET /dashboard');
    expect(routeLabel('GET /dashboardx')).to.equal('unmatched');
    expect(routeLabel('GET /admin/v2/keys')).to.equal('unmatched');
  });

  it('labels any other path unmatched', () => {
    for (const route of ['GET /', 'GET /wp-login.php', 'POST /v1/messages/count_tokens/x', 'GET /v1']) {
      expect(routeLabel(route)).to.equal('unmatched');
    }
  });
});
