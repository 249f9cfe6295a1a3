/**
 * The dashboard as an operator uses it in the first week, in Debian's chromium (playwright-core)
 * against a gateway on a pool of fake upstreams on loopback: why a request failed (its error and its
 * upstream attempts in the request log).
 *
 * The fakes' errors are the provider's: 529 `overloaded_error` (https://docs.anthropic.com/en/api/errors);
 * target `b` is a loopback port nothing listens on (connection refused).
 */
import path from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { ADMIN_TOKEN } from '../helpers/admin';
import { openTestBrowser, type TestBrowser } from '../helpers/browser';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { KEYS } from '../helpers/gateway';
import { startPoolGateway, type PoolGateway } from '../helpers/pool-gateway';
import { freePort } from '../helpers/ports';

/** A native messages request with the test key; its status once the reply has been read. */
async function sendMessage(url: string, model: string, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': KEYS.all, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('dashboard for the operator in a real browser', function () {
  this.timeout(120_000);
  let busy: FakeUpstream;
  let good: FakeUpstream;
  let gw: PoolGateway;
  let page: Page;
  let browser: TestBrowser;
  let consoleErrors: string[];

  before(async () => {
    busy = await startFakeUpstream(() => ({ kind: 'json', status: 529, statusText: 'Overloaded', body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    good = await startFakeUpstream();
    // Sonnet on a (529) then b (refused); every other model of the catalogue on a target that serves it.
    const others = (require('../../../config.json') as { models: Array<{ id: string }> }).models.map((model) => model.id).filter((id) => id !== 'model-sonnet-4.6');
    gw = await startPoolGateway([
      { id: 'a', url: busy.url, models: ['model-sonnet-4.6'] },
      { id: 'b', url: `http://127.0.0.1:${await freePort()}`, models: ['model-sonnet-4.6'] },
      { id: 'good', url: good.url, models: others },
    ], { maxRetries: 0 }, undefined, { env: { ADMIN_TOKEN } });
    browser = await openTestBrowser('gateway-dashboard-operator-');
    ({ page, consoleErrors } = browser);
    await page.goto(`${gw.url}/dashboard/`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByLabel('Admin token').press('Enter');
    await page.locator('#keys-table tr', { hasText: 'team-all' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await gw?.close();
    await busy?.close();
    await good?.close();
  });

  it('shows, in the request log, both attempts of a request two targets failed (529, then connection refused) and the error the client got', async () => {
    expect(await sendMessage(gw.url, 'model-sonnet-4.6')).to.equal(502);
    expect(await sendMessage(gw.url, 'model-haiku-4.5')).to.equal(200);
    const log = page.locator('#request-log');
    await log.getByLabel('Status').fill('502');
    await log.getByRole('button', { name: 'Show requests' }).click();
    const row = page.locator('#log-table tbody tr');
    await row.first().waitFor();
    expect(await row.count()).to.equal(1);
    expect(await row.locator('td[data-label="Error"]').textContent()).to.equal('api_error: the upstream could not be reached (ECONNREFUSED)');
    expect(await row.locator('td[data-label="Upstream attempts"]').textContent()).to.equal('a:529 overloaded_error (Overloaded) -> b:ECONNREFUSED');
    // The served request has neither.
    await log.getByLabel('Status').fill('200');
    await log.getByRole('button', { name: 'Show requests' }).click();
    await page.locator('#log-table tbody tr td[data-label="Status"]', { hasText: '200' }).waitFor();
    expect(await page.locator('#log-table tbody tr td[data-label="Error"]').allTextContents()).to.deep.equal(['']);
    expect(await page.locator('#log-table tbody tr td[data-label="Upstream attempts"]').allTextContents()).to.deep.equal(['']);
    await log.getByLabel('Status').fill('');
    expect(consoleErrors).to.deep.equal([]);
  });

  it('creates a key with the id the operator chose, refusing in the dialog an id the admin API would refuse or one taken', async () => {
    await page.getByRole('button', { name: 'New key' }).click();
    const dialog = page.locator('#key-dialog');
    await dialog.getByLabel('Name').fill('Search team');
    await dialog.getByLabel('Id (optional)').fill('search team!');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.locator('[role="alert"]').filter({ hasText: 'Write the id with letters, digits' }).waitFor();
    await dialog.getByLabel('Id (optional)').fill('team-all');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    await dialog.locator('[role="alert"]').filter({ hasText: 'a key with id "team-all" already exists' }).waitFor();
    await dialog.getByLabel('Id (optional)').fill('search.team-1');
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const secretDialog = page.locator('#secret-dialog');
    await secretDialog.waitFor({ state: 'visible' });
    await secretDialog.getByRole('button', { name: 'I have stored it' }).click();
    await page.locator('#keys-table tr', { hasText: 'Search team' }).locator('.key-id', { hasText: 'search.team-1' }).waitFor();
    const stored = await fetch(`${gw.url}/admin/v1/keys/search.team-1`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(stored.status).to.equal(200);
    expect(((await stored.json()) as { name: string }).name).to.equal('Search team');
    // Editing a key shows no id field: the id cannot change.
    await page.getByRole('button', { name: 'Edit Search team' }).click();
    expect(await dialog.getByLabel('Id (optional)').isVisible()).to.equal(false);
    await page.keyboard.press('Escape');
    expect(consoleErrors).to.deep.equal([]);
  });

  it('fits the agent sessions table in its panel at 1300 px wide, long session and agent ids included', async () => {
    const sessions = ['c0ffee00-1111-4222-8333-944445555666', 'codex-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'];
    for (const session of sessions) {
      expect(await sendMessage(gw.url, 'model-haiku-4.5', { 'x-claude-code-session-id': session, 'x-claude-code-agent-id': 'agent-general-purpose-7f3a9c' })).to.equal(200);
    }
    await page.setViewportSize({ width: 1300, height: 900 });
    const panel = page.locator('#sessions');
    await panel.getByLabel('Key').selectOption('team-all');
    for (let attempt = 0; ; attempt++) {
      await panel.getByRole('button', { name: 'Show sessions' }).click();
      try {
        await page.locator(`#sessions-table tr[data-session-id="${sessions[1]}"]`).waitFor({ timeout: 1000 });
        break;
      } catch (err) {
        if (attempt >= 20) throw err;
      }
    }
    const widths = await page.evaluate<{ scroll: number; client: number; tableRight: number; panelRight: number; page: number }>(`(() => {
      const result = document.getElementById('sessions-result');
      const table = document.getElementById('sessions-table').getBoundingClientRect();
      const panel = document.getElementById('sessions').getBoundingClientRect();
      return { scroll: result.scrollWidth, client: result.clientWidth, tableRight: table.right, panelRight: panel.right, page: document.documentElement.scrollWidth };
    })()`);
    // For a look (dist/ is the build's, never committed).
    await page.locator('#sessions').screenshot({ path: path.join(__dirname, '..', '..', 'sessions-1300.png') });
    expect(widths.scroll, 'the table scrolls sideways in its panel').to.be.at.most(widths.client);
    expect(widths.tableRight).to.be.at.most(widths.panelRight);
    expect(widths.page).to.be.at.most(1300);
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
